"""The catalog write of one find run: search_runs, agent_runs, candidates, schemas, plans, plan_items,
all in one transaction so a run lands completely or not at all. Only the graph's `record` node calls it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from agents.state import AgentReport, Candidate, Plan
from catalog import Catalog
from catalog.db import upsert
from catalog.untrusted import sql_command


def _ts(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch)


SUMMED = ("hub_calls", "cache_hits", "llm_calls", "llm_tokens", "llm_fallbacks", "tool_calls", "tool_errors")


def agent_totals(reports: list[AgentReport]) -> dict[str, int]:
    """The agents' counters summed over the run (search_runs.counts and the graph's summary)."""
    return {key: sum(getattr(r, key) for r in reports) for key in SUMMED}


def fallback_causes(reports: list[AgentReport]) -> dict[str, int]:
    """How many agents fell back to heuristic scores, by cause (most frequent first)."""
    counts: dict[str, int] = {}
    for r in reports:
        if r.llm_fallback_cause:
            counts[r.llm_fallback_cause] = counts.get(r.llm_fallback_cause, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def run_status(reports: list[AgentReport]) -> str:
    failed = sum(r.status == "failed" for r in reports)
    return "ok" if failed == 0 else ("failed" if failed == len(reports) else "partial")


def record_run(
    catalog: Catalog,
    state: Mapping[str, Any],
    reports: list[AgentReport],
    candidates: list[Candidate],
    plan: Plan,
    finished_at: float,
    llm_probe: dict[str, Any] | None = None,
) -> None:
    run_id = state["run_id"]
    planned = {i.repo_id for i in plan.items}
    counts = {
        "agents": len(reports),
        "agents_failed": sum(r.status == "failed" for r in reports),
        **agent_totals(reports),
        "candidates": len(candidates),
        "relevant": sum(c.status == "relevant" for c in candidates),
        "planned": len(planned),
        "llm_fallback_causes": fallback_causes(reports),
    }
    failures = "; ".join(f"{r.category}: {r.error}" for r in reports if r.status == "failed") or None
    with catalog.writer() as con:
        previous = {row[0]: row[1] for row in con.execute("SELECT repo_id, first_seen FROM candidates").fetchall()}
        now = datetime.now()
        upsert(
            con,
            "search_runs",
            [
                {
                    "run_id": run_id,
                    "domain": state["domain"],
                    "samples_requested": state["samples"],
                    "policy": state["config"]["policy"],
                    "started_at": _ts(state["started_at"]),
                    "finished_at": _ts(finished_at),
                    "status": run_status(reports),
                    "error": failures,
                    "counts": counts,
                    "llm_probe": llm_probe,
                }
            ],
        )
        upsert(
            con,
            "agent_runs",
            [
                {
                    "run_id": run_id,
                    "category": r.category,
                    "started_at": _ts(r.started_at),
                    "finished_at": _ts(r.finished_at),
                    "status": r.status,
                    "error": r.error,
                    "hub_calls": r.hub_calls,
                    "llm_calls": r.llm_calls,
                    "llm_tokens": r.llm_tokens,
                    "n_candidates": len(r.candidates),
                    "cache_hits": r.cache_hits,
                    "llm_fallbacks": r.llm_fallbacks,
                    "budget_exhausted": r.budget_exhausted,
                    "tool_calls": r.tool_calls,
                    "tool_errors": r.tool_errors,
                    "llm_fallback_cause": r.llm_fallback_cause,
                }
                for r in reports
            ],
        )
        # Re-recording a run (resume) replaces its events: they are the agents' lists, written whole.
        con.execute("DELETE FROM llm_events WHERE run_id = ?", [run_id])
        upsert(
            con,
            "llm_events",
            [
                {
                    "run_id": run_id,
                    "category": r.category,
                    "seq": i,
                    "step": e["step"],
                    "cause": e["cause"],
                    "status_code": e["status"],
                    "detail": e["detail"],
                    "outcome": e["outcome"],
                    "logged_at": _ts(e["at"]),
                }
                for r in reports
                for i, e in enumerate(r.llm_events)
            ],
        )
        upsert(
            con,
            "candidates",
            [_candidate_row(c, run_id, now, previous.get(c.repo_id), c.repo_id in planned) for c in candidates],
        )
        upsert(
            con,
            "schemas",
            [
                {
                    "repo_id": c.repo_id,
                    "revision": c.revision,
                    "config": s["config"],
                    "split": s["split"],
                    "features": s["features"],
                    "sample_rows": s["sample_rows"],
                    "detected": s.get("detected"),
                }
                for c in candidates
                if c.revision
                for s in c.schemas
            ],
        )
        upsert(
            con,
            "plans",
            [
                {
                    "plan_id": plan.plan_id,
                    "run_id": run_id,
                    "domain": state["domain"],
                    "samples_requested": plan.samples_requested,
                    "samples_existing": plan.samples_existing,
                    "created_at": now,
                    "totals": plan.totals,
                    "params": {"config": state["config"], "existing_repos": plan.existing_repos},
                }
            ],
        )
        upsert(con, "plan_items", [{"plan_id": plan.plan_id, **i.model_dump()} for i in plan.items])


def _candidate_row(c: Candidate, run_id: str, now: datetime, first_seen: datetime | None, planned: bool) -> dict:
    # find's own verdict only: whether a candidate is now data is ingest's record (view candidate_status).
    status = "planned" if planned else c.status
    return {
        "repo_id": c.repo_id,
        "revision": c.revision,
        "category": c.category,
        "also_found_by": c.also_found_by,
        "score": c.score,
        "score_reasons": c.reasons,
        "downloads": c.downloads,
        "likes": c.likes,
        "license": c.license,
        "gated": c.gated,
        "tags": c.tags,
        "n_rows": c.n_rows,
        "size_bytes": c.size_bytes,
        "card_summary": c.card_summary,
        "mode": c.mode,
        "est_yield": c.est_yield,
        "flags": c.flags,
        "relevance": c.relevance.get("verdict"),
        "relevance_evidence": c.relevance.get("evidence"),
        "content_signals": {k: v for k, v in c.relevance.items() if k not in ("verdict", "evidence")} or None,
        "first_seen": first_seen or now,
        "last_seen": now,
        "last_run_id": run_id,
        "status": status,
    }


def review_queries(run_id: str, plan_id: str) -> list[str]:
    """The exact `draftset sql` commands to review a run (ids are ours, quoted safely)."""
    rid, pid = run_id.replace("'", "''"), plan_id.replace("'", "''")  # SQL string literals
    return [
        sql_command(
            "SELECT category, status, started_at, finished_at, hub_calls, n_candidates, error "
            f"FROM agent_runs WHERE run_id = '{rid}' ORDER BY started_at"
        ),
        sql_command(
            "SELECT repo_id, category, score, status, flags, mode, n_rows FROM candidate_status "
            f"WHERE last_run_id = '{rid}' ORDER BY score DESC"
        ),
        sql_command(
            "SELECT repo_id, category, status, relevance, relevance_evidence FROM candidate_status "
            f"WHERE last_run_id = '{rid}' AND relevance IN ('off_domain', 'on_content', 'on_topic', 'review')"
        ),
        sql_command(
            f"SELECT repo_id, score_reasons FROM candidates WHERE last_run_id = '{rid}' AND status = 'irrelevant'"
        ),
        sql_command(f"SELECT * FROM plan_items WHERE plan_id = '{pid}' ORDER BY est_samples DESC"),
    ]
