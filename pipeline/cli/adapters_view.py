"""Rich rendering for `draftset adapters`: proposal summaries, contract checks, raw → canonical examples."""

from __future__ import annotations

import json
from typing import Any

from rich.columns import Columns
from rich.panel import Panel
from rich.syntax import Syntax

from adapters.contract import ContractResult
from adapters.store import AdapterRecord
from catalog.untrusted import clean_text
from pipeline.cli.common import console, print_table, safe  # this module is only imported by commands that run


def _table(columns: list[str], rows: list[list[Any]], title: str) -> None:
    """print_table prints every cell literally: labels, reasons and notes come from untrusted data."""
    print_table(columns, rows, title=title)


def contract_cell(record: AdapterRecord) -> str:
    if not record.contract:
        return "not run"
    state = "pass" if record.contract.get("passed") else "FAIL"
    return state if record.contract_current else f"{state} (old spec)"


def print_list(records: list[AdapterRecord]) -> None:
    _table(["repo", "status", "mode", "layout", "category", "contract", "yield", "reviewed by", "revision",
            "spec hash"],
           [[r.repo_id, r.status, r.spec.mode, r.spec.layout, r.spec.category, contract_cell(r),
             (r.contract or {}).get("yield", ""), r.reviewed_by, r.revision[:8], r.spec_hash[:8]]
            for r in records], title=f"{len(records)} adapter(s)")


def print_reasons(record: AdapterRecord) -> None:
    spec = record.spec
    _table(["field", "reason", "review?"],
           [[name, why, "REVIEW" if name in spec.needs_review else ""] for name, why in spec.reasons.items()],
           title="why each field was chosen")


def print_contract(result: ContractResult | dict[str, Any], repo_id: str) -> None:
    data = result.to_json() if isinstance(result, ContractResult) else result
    _table(["check", "result", "detail"],
           [[c["name"], "pass" if c["passed"] else "FAIL", c["detail"]] for c in data["checks"]],
           title=f"contract of {repo_id}: {'PASSED' if data['passed'] else 'FAILED'} "
                 f"({data['n_records']} records / {data['n_rows']} rows)")
    if data["quarantined"]:
        _table(["row", "field", "reason"],
               [[q["row_index"], q["field"], q["reason"][:100]] for q in data["quarantined"][:10]],
               title=f"rejected rows (first {min(10, len(data['quarantined']))}; ingest quarantines these)")


def print_role_counts(record: AdapterRecord) -> None:
    counts = (record.contract or {}).get("role_counts") or {}
    if record.spec.layout == "columns" or not counts:
        return
    role_map = record.spec.role_map
    _table(["raw label", "turns", "maps to"],
           [[label, n, role_map.get(label, "UNMAPPED")] for label, n in counts.items()],
           title="role labels in the sample")


def print_examples(record: AdapterRecord) -> None:
    for g in record.spec.golden:
        canonical = g.expected if g.expected is not None else {"error": g.expected_error}
        if isinstance(canonical, list):
            # Only the fields that carry information, so raw and canonical fit side by side.
            canonical = [{"id": c["id"], "mode": c["mode"],
                          "messages": [{k: v for k, v in m.items() if v is not None} for m in c["messages"]]}
                         for c in canonical]
        panels = [Panel(Syntax(clean_text(json.dumps(g.row, indent=1, ensure_ascii=False, default=str)[:2500]),
                               "json", word_wrap=True), title=f"raw row {g.row_index}"),
                  Panel(Syntax(clean_text(json.dumps(canonical, indent=1, ensure_ascii=False)[:2500]), "json",
                               word_wrap=True), title="canonical record")]
        console.print(Columns(panels, equal=True, expand=True))


def print_show(record: AdapterRecord) -> None:
    console.print(f"[bold]{safe(record.repo_id)}[/]  status [bold]{safe(record.status)}[/]  spec "
                  f"{safe(record.spec_hash[:12])}  revision {safe(record.revision[:12])}"
                  + safe(f"  reviewed by {record.reviewed_by} at {record.reviewed_at:%Y-%m-%d %H:%M}"
                         f" ({record.note or 'no note'})" if record.reviewed_by else ""), highlight=False)
    console.print(Syntax(clean_text(record.spec.model_copy(update={"golden": [], "reasons": {}}).to_yaml()), "yaml"))
    print_reasons(record)
    print_role_counts(record)
    if record.contract:
        print_contract(record.contract, record.repo_id)
        if not record.contract_current:
            console.print("[yellow]this contract ran on an older spec: run `draftset adapters test "
                          f"{safe(record.repo_id)}`[/]")
    print_examples(record)
