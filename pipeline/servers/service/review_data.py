"""What the API and the review page show about an adapter: spec, reasons, contract, raw → canonical previews.

Previews read the pinned revision's files (cached on disk by huggingface_hub after the first read) and
apply the spec row by row; they are kept in memory per (spec hash, revision, rows), so reviewers and the
benchmark's readers do not re-read files on every request.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from typing import Any

from adapters.map.apply import RowError, apply_row, role_labels
from adapters.read.source import iter_raw_rows
from adapters.review import flags, store, verdict
from catalog.db import Catalog
from catalog.isolate import current_bound
from pipeline.servers.service.cache import Cache
from pipeline.servers.service.review_turns import align

MAX_PREVIEW_ROWS = 50
_CACHE: OrderedDict[tuple, list[dict[str, Any]]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def summary(record: store.AdapterRecord) -> dict[str, Any]:
    contract = record.contract or {}
    found = verdict.of_record(record)
    return {
        "repo_id": record.repo_id,
        "status": record.status,
        "mode": record.spec.mode,
        "layout": record.spec.layout,
        "category": record.spec.category,
        "revision": record.revision,
        "spec_hash": record.spec_hash,
        "contract": found.kind + (" (old spec)" if contract and not record.contract_current else ""),
        "verdict": found.to_json(),  # the one verdict (adapters.review.verdict): the CLI and the page show the same
        "approval": verdict.approval_word(found.to_json(), record.status),
        "next": found.next_step(record.repo_id, record.status),
        "yield": contract.get("yield"),
        "reviewed_by": record.reviewed_by,
        "reviewed_at": record.reviewed_at,
        "note": record.note,
        "stale": record.status == "stale",
        "open_flags": len(record.open_flags),
    }


def flag_list(record: store.AdapterRecord) -> list[dict[str, Any]]:
    """The adapter's flags, oldest first, each with its state against the current spec (adapters.review.flags)."""
    return flags.listed(record.flags, record.spec_hash)


def stale_reason(record: store.AdapterRecord) -> str | None:
    """Why an approval no longer holds (the gate's own two conditions), for the page to say."""
    if record.status != "stale":
        return None
    if record.approved_spec_hash != record.spec_hash:
        return (
            f"approved by {record.reviewed_by} for spec {str(record.approved_spec_hash)[:12]}; "
            f"the spec is now {record.spec_hash[:12]}"
        )
    return (
        f"approved by {record.reviewed_by} for revision {str(record.approved_revision)[:12]}; "
        f"the dataset is now at {record.revision[:12]}"
    )


def previews(record: store.AdapterRecord, rows: int, *, endpoint: str, token: str | None) -> list[dict[str, Any]]:
    """The first `rows` raw rows beside their canonical records (or the row's error), turn by turn."""
    rows = max(0, min(rows, MAX_PREVIEW_ROWS))
    key = (record.repo_id, record.spec_hash, record.revision, rows)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    out = []
    for raw in iter_raw_rows(record.spec, endpoint=endpoint, token=token, limit=rows) if rows else ():
        item: dict[str, Any] = {
            "row_index": raw.row_index,
            "raw": raw.row,
            "labels": [],
            "canonical": [],
            "error": raw.error,
        }
        if raw.row is not None:
            item["labels"] = role_labels(record.spec, raw.row)
            try:
                item["canonical"] = [c.model_dump(mode="json") for c in apply_row(record.spec, raw.row_index, raw.row)]
            except RowError as exc:
                item["error"] = f"{exc.field}: {exc.reason}"
        item["turns"] = align(record.spec, raw.row, item["canonical"])
        item["length"] = len(json.dumps(raw.row, ensure_ascii=False, default=str))
        out.append(item)
    bound = current_bound()
    if bound is not None and bound.stopped is not None:
        return out  # cut short by its request (previewgate.py): not the preview, never cached
    with _CACHE_LOCK:
        _CACHE[key] = out
        while len(_CACHE) > 64:
            _CACHE.popitem(last=False)
    return out


def detail(
    catalog: Catalog, repo_id: str, rows: int, *, endpoint: str, token: str | None, cache: Cache | None = None
) -> dict[str, Any]:
    """Everything the review page shows; all but the previews is cached until the next catalog write."""
    record, data = (
        cache.get(("detail", repo_id), lambda: _detail(catalog, repo_id)) if cache else _detail(catalog, repo_id)
    )
    failing = set(data["failing_rows"])
    shown = [
        {**p, "failing": p["row_index"] in failing, "quarantined": p["error"] is not None}
        for p in previews(record, rows, endpoint=endpoint, token=token)
    ]
    return {**data, "previews": shown}


ROW_MENTION = re.compile(r"\brow (\d+)\b")


def failing_rows(contract: dict[str, Any] | None) -> list[int]:
    """Sample rows a failing or warning check names (`row 12 messages[3] ...`): the review filter 'failing'."""
    found: set[int] = set()
    for c in (contract or {}).get("checks", []):
        if not c.get("passed"):
            found.update(int(n) for n in ROW_MENTION.findall(str(c.get("detail", ""))))
    return sorted(found)


def _detail(catalog: Catalog, repo_id: str) -> tuple[store.AdapterRecord, dict[str, Any]]:
    record = store.require(catalog, repo_id)
    spec = record.spec
    contract = record.contract
    return record, {
        **summary(record),
        "stale_reason": stale_reason(record),
        "flags": (listed := flag_list(record)),
        "flags_by_row": _by_row(listed),
        "flag_kinds": flags.KINDS,
        "spec": spec.model_dump(mode="json", exclude={"golden", "reasons"}),
        "spec_yaml": spec.model_copy(update={"golden": [], "reasons": {}}).to_yaml(),
        "reasons": [
            {"field": f, "reason": why, "needs_review": f in spec.needs_review} for f, why in spec.reasons.items()
        ],
        "role_map": spec.role_map,
        "role_counts": (contract or {}).get("role_counts") or {},
        "contract_current": record.contract_current,
        "contract_result": contract,
        "failing_rows": failing_rows(contract),
        "rejected_by_cause": _rejected(contract),
        # Where every raw field went, when the contract carries that table (a list of rows, or a mapping).
        "accounting": _accounting(contract),
    }


def _by_row(listed: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for f in listed:
        out.setdefault(f["row_index"], []).append(f)
    return out


ACCOUNTING = {  # the contract's field accounting (adapters.infer.accounting.FieldReport): column -> how to show it
    "field": lambda f: f["path"],
    "rows": lambda f: f["rows"],
    "avg chars": lambda f: round(f["mean_chars"]),
    "share of text": lambda f: f"{f['share']:.0%}",
    "went to": lambda f: ", ".join(f["where"][:4]),
    "status": lambda f: f["status"],
    "reason / example": lambda f: f["reason"] or (repr(f["example"][:60]) if f["status"] == "unaccounted" else ""),
}


def _accounting(contract: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where every raw field went, as a table, when the contract result carries the accounting."""
    fields = (contract or {}).get("fields") or []
    if not fields:
        return None
    return {
        "columns": list(ACCOUNTING),
        "rows": [[show(f) for show in ACCOUNTING.values()] for f in fields],
        "status": [f["status"] for f in fields],
        "unaccounted": sum(f["status"] == "unaccounted" for f in fields),
    }


def _rejected(contract: dict[str, Any] | None) -> list[tuple[str, int, str]]:
    """Rejected rows, one line per cause: the contract's own grouping, else (older results) grouped here."""
    grouped = [p for p in (contract or {}).get("problems") or [] if p.get("level") == "quarantine"]
    if grouped:
        return [(p["cause"].removeprefix("rejected: "), int(p["count"]), p["example"]) for p in grouped]
    return verdict.rejected_by_cause(contract or {})
