"""Catalog reads of the service: filtered candidates, a plan with its cost, and streamed read-only SQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson

from catalog.db import Catalog
from catalog.owner import read_slot
from catalog.sql import iter_rows, open_query

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


def run_sql(catalog: Catalog, query: str, limit: int) -> bytes | Iterator[bytes]:
    """Check and run `query` through the CLI's read-only path (catalog.sql.open_query: same guards, same
    errors, raised before any byte is sent). The answer is `{"columns", "rows", "row_count", "truncated"}`:
    as bytes when it fits in the first batch (the common case: one thread hop, no streaming overhead),
    else streamed batch by batch."""
    opened = open_query(catalog, query)
    with read_slot(catalog.path):
        columns, cur = opened.__enter__()
    try:
        with read_slot(catalog.path):
            first = list(iter_rows(cur, min(BATCH, limit) + 1))
    except BaseException:
        opened.__exit__(None, None, None)
        raise
    head = orjson.dumps({"columns": columns})[:-1] + b', "rows": ['
    if len(first) <= min(BATCH, limit):  # everything is here
        opened.__exit__(None, None, None)
        return head + _rows(first) + b'], "row_count": %d, "truncated": false}' % len(first)

    def body() -> Iterator[bytes]:
        batch, sent = first[: min(BATCH, limit)], 0
        try:
            yield head
            while batch:
                yield (b", " if sent else b"") + _rows(batch)
                sent += len(batch)
                if sent >= limit:
                    break
                with read_slot(catalog.path):  # the slot only while DuckDB works, not while the client reads
                    batch = list(iter_rows(cur, min(BATCH, limit - sent)))
            with read_slot(catalog.path):
                truncated = sent >= limit and bool(list(iter_rows(cur, 1)))
            yield b'], "row_count": %d, "truncated": %s}' % (sent, b"true" if truncated else b"false")
        finally:
            opened.__exit__(None, None, None)

    return body()


def _rows(rows: list[tuple]) -> bytes:
    return orjson.dumps([list(r) for r in rows], default=str, option=orjson.OPT_PASSTHROUGH_DATETIME)[1:-1]
