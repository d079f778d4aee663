"""Catalog reads of the service: filtered candidates, a plan with its cost, bounded read-only SQL, and what the
CLI's read commands print in team mode (status, one adapter row)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import orjson

from catalog.db import Catalog
from catalog.home import Home
from catalog.sql import Watch, iter_rows, open_query

BATCH = 500


def candidates(
    catalog: Catalog, category: str | None, status: str | None, q: str | None, min_score: float | None, limit: int
) -> list[dict[str, Any]]:
    where: list[str] = []
    params: list[Any] = []
    if category:
        where.append("category = ?")
        params.append(category)
    if status:
        where.append("coalesce(status, '') = ?")
        params.append(status)
    if q:
        where.append("(repo_id ILIKE ? OR coalesce(card_summary, '') ILIKE ?)")
        params += [f"%{q}%", f"%{q}%"]
    if min_score is not None:
        where.append("score >= ?")
        params.append(min_score)
    sql = (
        "SELECT repo_id, category, score, status, mode, n_rows, license, flags, card_summary, last_run_id "
        "FROM candidate_status"  # status 'ingested' comes from ingest's stage_runs
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY score DESC NULLS LAST, repo_id LIMIT ?"
    )
    rows = catalog.query(sql, [*params, limit])
    for row in rows:
        row["flags"] = json.loads(row["flags"]) if row["flags"] else []
    return rows


def plan(catalog: Catalog, plan_id: str | None = None) -> dict[str, Any] | None:
    """A plan (default: the newest) with its items, total regeneration hours and hidden-state TB."""
    found = catalog.query(
        "SELECT * FROM plans " + ("WHERE plan_id = ? " if plan_id else "") + "ORDER BY created_at DESC LIMIT 1",
        [plan_id] if plan_id else [],
    )
    if not found:
        return None
    head = found[0]
    totals = json.loads(head["totals"]) if head["totals"] else {}
    items = catalog.query(
        "SELECT * FROM plan_items WHERE plan_id = ? ORDER BY est_samples DESC, repo_id", [head["plan_id"]]
    )
    return {
        "plan_id": head["plan_id"],
        "run_id": head["run_id"],
        "domain": head["domain"],
        "samples_requested": head["samples_requested"],
        "created_at": head["created_at"],
        "totals": totals,
        "regen_hours": totals.get("regen_hours"),
        "hidden_state_tb": (totals.get("hidden_state_bytes") or 0) / 1e12,
        "items": items,
    }


def run_sql(catalog: Catalog, query: str, limit: int, max_bytes: int, watch: Watch, hide_secrets: bool) -> bytes:
    """Check and run `query` through the CLI's read-only path (catalog.sql.open_query: same guards, same
    errors), bounded by `watch` (time limit, cancel) and capped at `limit` rows and about `max_bytes` of
    JSON. The answer is `{"columns", "rows", "row_count", "truncated", "truncated_by"}`, built whole:
    the caps bound it, and a statement that fails or is stopped mid-way answers one error, not half a
    document."""
    parts: list[bytes] = []
    size, sent, truncated_by = 0, 0, None
    with open_query(catalog, query, watch, hide_secrets) as (columns, cur):
        while sent < limit:
            watch.check()
            batch = list(iter_rows(cur, min(BATCH, limit - sent)))
            if not batch:
                break
            for row in batch:  # row by row so one huge cell cannot overshoot the byte cap by a batch
                encoded = _rows([row])
                if size + len(encoded) > max_bytes:
                    truncated_by = "bytes"
                    break
                parts.append(encoded)
                size += len(encoded) + 2
                sent += 1
            if truncated_by:
                break
        if truncated_by is None and sent >= limit and list(iter_rows(cur, 1)):
            truncated_by = "rows"
    head = orjson.dumps({"columns": columns})[:-1] + b', "rows": ['
    return (
        head
        + b", ".join(parts)
        + b'], "row_count": %d, "truncated": %s, "truncated_by": %s}'
        % (sent, b"true" if truncated_by else b"false", orjson.dumps(truncated_by))
    )


def run_sql_in_child(catalog: Catalog, query: str, limit: int, max_bytes: int, hide_secrets: bool) -> bytes:
    """run_sql where catalog.sql_child runs it: the parent's watch bounds it (it kills this process)."""
    return run_sql(catalog, query, limit, max_bytes, Watch(), hide_secrets)


def _rows(rows: list[tuple]) -> bytes:
    return orjson.dumps([list(r) for r in rows], default=str, option=orjson.OPT_PASSTHROUGH_DATETIME)[1:-1]


# -- team mode: what the CLI's read commands print, answered from the service's home ----------------------
def adapter_row(catalog: Catalog, repo_id: str, row: int, *, endpoint: str, token: str | None) -> dict[str, Any]:
    """`adapters preview`: the record, one raw row and the spec's verdict on it (adapters.review.preview)."""
    from adapters.review import store
    from adapters.review.preview import canonical_of, read_row

    record = store.require(catalog, repo_id)
    raw = read_row(record.spec, row, endpoint=endpoint, token=token)
    return {
        "record": record.model_dump(mode="json"),
        "raw": {"row_index": raw.row_index, "row": raw.row, "error": raw.error},
        "canonical": canonical_of(record.spec, raw),
    }


def status(catalog: Catalog, home: Path, limit: int, reached_at: str) -> dict[str, Any]:
    """`draftset status` of the service's home: regeneration jobs, recent stage runs, and the holder of the
    catalog, which is this service (its URL and pid from service.json; else the URL it was reached at)."""
    from catalog.liveness import mark_interrupted
    from pipeline.regenerate.status import recent_stage_runs, regen_jobs

    mark_interrupted(catalog)  # runs whose process died read `interrupted`, not `running`
    try:  # this process wrote it at start (owner.running_service skips its own pid, so read it here)
        service = json.loads(Home(home).service_file.read_text())
    except (OSError, ValueError):
        service = {}
    return {
        "regen_jobs": regen_jobs(home),
        "regen_root": str(Home(home).regen_root),
        "stage_runs": recent_stage_runs(home, limit),
        "holder": {
            "kind": "service",
            "url": service.get("url") or reached_at,
            "pid": service.get("pid", os.getpid()),
            "host": socket.gethostname(),
            "catalog": str(catalog.path),
        },
    }
