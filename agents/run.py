"""Run (or resume) the find graph with a SQLite checkpoint, streaming per-agent progress events.

    async for event in stream_find(env, FindRequest(domain="agentic coding", samples=100_000)):
        ...  # {"category", "stage", "hub_calls", ...}; the last event is {"stage": "finished", ...}

`--resume RUN_ID` re-enters the same LangGraph thread: agents whose results were checkpointed are
not run again, only the unfinished ones (and the nodes after them). A run whose checkpoint is finished
but whose catalog record is missing (killed between the agents and the record step, or the record
write lost) runs the steps after the agents again. `retry_failed` re-runs every agent without an ok
report (failed or never finished), then merges, ranks, plans and records again. A run that finished and
was recorded but whose adapter proposals were cut short runs nothing of the graph: its final state is
yielded at once and the caller proposes the datasets without a stored proposal (agents/proposals.py).

The run's search_runs row is written as `running` (with its owner process) when it starts, so a find
whose process died reads `interrupted` (catalog/liveness.py), not nothing at all. The request itself is
checkpointed before anything slow (the LLM probe, the first agent), so a run killed at any point has a
checkpoint to resume; LangGraph then checkpoints after every node (agents, merge, rank, plan, record).
`resume_plan` says what a resume will redo before it does it (the first event of a resumed run).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents import proposals
from agents.configuration import FindConfig
from agents.graph import Runtime, build_graph
from agents.graph import plan as plan_node
from agents.policies import make_policy
from agents.tools import HubTools
from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.hub import check_reachable
from catalog.liveness import mark_interrupted, owner
from catalog.untrusted import command, sql_command


@dataclass
class FindEnv:
    """Where to search and where to write; built by the CLI from settings (tokens stay in here)."""

    home: Path
    endpoint: str
    viewer_base: str
    token: str | None = field(default=None, repr=False)  # never printed, logged or checkpointed
    llm_client: Any | None = None
    llm_model: str | None = None
    # Planned training tokens -> the optimizer steps the training recipe would take on them, for the forecast
    # (pipeline/train/recipes.py `steps_for_tokens`: the CLI and the service hand it in, agents never import a
    # stage). None: not known, and the forecast's sentence says it assumed its points' typical steps.
    train_steps: Callable[[float], int | None] | None = None


@dataclass
class FindRequest:
    domain: str
    samples: int
    config: FindConfig = FindConfig()


def new_run_id() -> str:
    return f"find-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def _recorded(catalog: Catalog, run_id: str) -> bool:
    """Did the record step land for this run (a finished search_runs row)?"""
    if not catalog.path.exists():
        return False
    rows = catalog.query("SELECT status FROM search_runs WHERE run_id = ?", [run_id])
    return bool(rows) and rows[0]["status"] not in ("running", "interrupted")


def _mark_running(catalog: Catalog, run_id: str, values: dict[str, Any]) -> None:
    mark_interrupted(catalog)  # earlier runs whose process died stop showing as running
    catalog.upsert(
        "search_runs",
        [
            {
                "run_id": run_id,
                "domain": values["domain"],
                "samples_requested": values["samples"],
                "policy": values["config"].get("policy"),
                "started_at": datetime.fromtimestamp(values["started_at"]),
                "status": "running",
                "owner": owner(),
            }
        ],
    )


AFTER_AGENTS = ["merge", "rank", "plan_mix", "record", "summary"]


async def _plan_resume(
    graph: Any, cfg: RunnableConfig, saved: Any, run_id: str, catalog: Catalog, retry_failed: bool
) -> list[str]:
    """Rewind the checkpoint so that astream(None) does what the resume needs, and say what that is (one
    line each); raise when nothing is left."""
    latest = {r["category"]: r for r in saved.values.get("reports", [])}  # a retry's report wins
    ok = {c for c, r in latest.items() if r["status"] == "ok"}
    briefs = (await plan_node(saved.values))["briefs"]
    todo = [b for b in briefs if b["category"] not in ok]
    done_line = f"agents done: {len(ok)} of {len(briefs)}"
    if retry_failed and todo:
        # as if `plan` had just produced only these briefs: fan_out sends them, then merge → record.
        await graph.aupdate_state(cfg, {"briefs": todo}, as_node="plan")
        return [done_line, f"will run again: {', '.join(b['category'] for b in todo)}; then {' → '.join(AFTER_AGENTS)}"]
    elif saved.next:  # interrupted mid-graph: LangGraph continues from the checkpoint
        pending = [n for n in saved.next if n != "category_agent"]
        if "__start__" in saved.next or "plan" in saved.next or not latest:
            return ["nothing finished yet (stopped before the first agent): will run every step"]
        waiting = [b["category"] for b in todo]
        lines = [done_line]
        if waiting:
            lines.append(f"will run: {', '.join(waiting)} (finished agents are not repeated)")
        lines.append(f"then: {' → '.join(pending or AFTER_AGENTS)}")
        return lines
    elif not _recorded(catalog, run_id):
        # Finished in the checkpoint, but the catalog has no record of it: run merge → record again.
        await graph.aupdate_state(cfg, None, as_node="category_agent")
        return [done_line, f"the catalog has no record of the run: will redo {' → '.join(AFTER_AGENTS)}"]
    elif (phase := proposals.load(catalog, run_id)) is not None and phase.todo and not retry_failed:
        # The graph and its record are done; only the proposal phase (agents/proposals.py) was cut short.
        return [done_line, phase.tally(), f"will propose: {', '.join(phase.todo)} (saved ones are not redone)"]
    else:
        failed = sorted(set(latest) - ok)
        phase = proposals.load(catalog, run_id)
        raise DraftsetError(
            f"find run {run_id!r} already finished"
            + (f" ({len(failed)} agent(s) failed: {', '.join(failed)})" if failed else "")
            + (f"; {phase.tally()}" if phase else ""),
            hint=command("draftset", "find", "--resume", run_id, "--retry-failed")
            if failed
            else sql_command(f"SELECT * FROM candidates WHERE last_run_id = '{run_id.replace(chr(39), chr(39) * 2)}'"),
        )


async def stream_find(
    env: FindEnv,
    request: FindRequest | None = None,
    *,
    resume: str | None = None,
    run_id: str | None = None,
    hub: HubTools | None = None,
    retry_failed: bool = False,
) -> AsyncIterator[dict[str, Any]]:
    """Start a run (request) or continue one (resume=RUN_ID); yields progress, then the final state."""
    if (request is None) == (resume is None):
        raise ValueError("give either a request or resume=RUN_ID")
    check_reachable(env.endpoint)  # a dead Hub gets one clear error now, not every agent's retries later
    env.home.mkdir(parents=True, exist_ok=True)
    run_id = resume or run_id or new_run_id()
    cfg: RunnableConfig = {"configurable": {"thread_id": run_id}}
    graph_input: dict[str, Any] | None
    async with AsyncSqliteSaver.from_conn_string(str(Home(env.home).find_checkpoints)) as saver:
        if resume:
            saved = await build_graph(FindConfig()).compile(checkpointer=saver).aget_state(cfg)
            if not saved.values:
                raise DraftsetError(
                    f"no find run {run_id!r} in {Home(env.home).find_checkpoints}",
                    hint="use the run id `draftset find` printed when it started (runs that "
                    'finished are listed by: draftset sql "SELECT run_id FROM search_runs")',
                )
            redo = await _plan_resume(
                build_graph(FindConfig()).compile(checkpointer=saver),
                cfg,
                saved,
                run_id,
                Catalog(env.home),
                retry_failed,
            )
            yield {"stage": "resume", "run_id": run_id, "redo": redo}
            if not saved.next and _recorded(Catalog(env.home), run_id) and not retry_failed:
                # Only proposals are left (the caller runs that phase): no agent, probe or record step again.
                yield {
                    "stage": "finished",
                    "run_id": run_id,
                    "state": saved.values,
                    "hub_requests": {},
                    "llm_probe": None,
                }
                return
            _mark_running(Catalog(env.home), run_id, saved.values)
            config, graph_input = FindConfig(**saved.values["config"]), None
        else:
            assert request is not None  # exactly one of request and resume, checked above
            config = request.config
            graph_input = {
                "run_id": run_id,
                "domain": request.domain,
                "samples": request.samples,
                "config": config.model_dump(mode="json"),
                "started_at": time.time(),
                "reports": [],
            }
            _mark_running(Catalog(env.home), run_id, graph_input)
            # The request is checkpointed now, before the LLM probe or any agent: killed from here on,
            # the run can be resumed (astream(None) starts from this checkpoint, as --resume does).
            await build_graph(config).compile(checkpointer=saver).aupdate_state(cfg, graph_input, as_node="__start__")
            graph_input = None
        cfg["max_concurrency"] = config.max_concurrency
        hub = hub or HubTools(
            env.endpoint, env.viewer_base, config, token=env.token, cache_dir=Home(env.home).hub_cache
        )
        policy = make_policy(config, env.llm_client, env.llm_model)
        probed: dict[str, Any] | None = None
        if hasattr(policy, "prepare"):  # the llm policy probes the endpoint's structured output once per run
            probed = (await policy.prepare()).model_dump()
            yield {"stage": "llm_probe", **probed}
        with ThreadPoolExecutor(max_workers=16, thread_name_prefix="find-agent") as pool:
            cfg["configurable"]["runtime"] = Runtime(
                hub=hub,
                policy=policy,
                executor=pool,
                catalog=Catalog(env.home),
                has_token=bool(env.token),
                train_steps=env.train_steps,
            )
            graph = build_graph(config).compile(checkpointer=saver)
            yield {"stage": "begin", "run_id": run_id, "resumed": bool(resume)}
            # aclosing: when the caller stops early (Ctrl-C), LangGraph still flushes the writes of
            # the agents that finished, so --resume does not repeat them.
            parts = cast(  # a list stream_mode yields (mode, chunk) pairs, from an async generator
                AsyncGenerator[tuple[str, Any], None],
                graph.astream(graph_input, cfg, stream_mode=["custom", "updates"]),
            )
            async with aclosing(parts) as stream:
                async for mode, chunk in stream:
                    if mode == "custom":
                        yield chunk
                        continue
                    for node, update in chunk.items():  # a node finished: its writes are being saved
                        for report in (update or {}).get("reports", []) if node.endswith("category_agent") else []:
                            yield {"category": report["category"], "stage": "saved", "status": report["status"]}
                        yield {"stage": "node", "node": node}
            final = (await graph.aget_state(cfg)).values
        yield {
            "stage": "finished",
            "run_id": run_id,
            "state": final,
            "hub_requests": dict(hub.requests),
            "llm_probe": probed,
        }


async def run_find(env: FindEnv, request: FindRequest | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run to completion without progress display; returns the final event."""
    last: dict[str, Any] = {}
    async for event in stream_find(env, request, **kwargs):
        last = event
    return last
