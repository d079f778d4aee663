"""Rich rendering for `draftset adapters`: proposal summaries, contract checks, raw → canonical examples."""

from __future__ import annotations

import json
from typing import Any

import yaml
from rich.columns import Columns
from rich.panel import Panel
from rich.syntax import Syntax

from adapters.prove.contract import ContractResult
from adapters.review import flags, verdict
from adapters.review.store import AdapterRecord
from catalog.untrusted import clean_text, shell_word
from pipeline.cli.common import console, literal, print_table, safe  # this module is only imported by commands that run


def _table(columns: list[str], rows: list[list[Any]], title: str, records: list[dict[str, Any]] | None = None) -> None:
    """print_table prints every cell literally: labels, reasons and notes come from untrusted data."""
    print_table(columns, rows, title=title, records=records)


def contract_cell(record: AdapterRecord) -> str:
    """The adapter's verdict (adapters.review.verdict), as the API and the review page word it."""
    if record.contract and not record.contract_current:
        return "not run (old spec)"
    found = verdict.of_record(record)
    return found.kind.upper() if found.kind in ("fail", "refused") else found.kind


LIST_COLUMNS = ["repo", "verdict", "approval", "status", "mode", "layout", "category", "yield", "reviewed by"]
LIST_COLUMNS += ["revision", "spec hash"]


approval_cell = verdict.approval_word  # one wording for the CLI, the API and the pages


def _list_row(s: dict[str, Any], verdict_word: str) -> list[Any]:
    return [
        s["repo_id"],
        verdict_word,
        approval_cell(s["verdict"], s["status"]),
        s["status"],
        s["mode"],
        s["layout"],
        s["category"],
        s.get("yield") or "",
        s.get("reviewed_by"),
        s["revision"][:8],
        s["spec_hash"][:8],
    ]


def _list_record(s: dict[str, Any]) -> dict[str, Any]:
    """--json: full revision and spec hash (the table shortens them), the verdict object, the next command."""
    keys = ("repo_id", "status", "mode", "layout", "category", "yield", "reviewed_by", "revision", "spec_hash")
    return {k: s.get(k) for k in keys} | {
        "verdict": s["verdict"],
        "approval": approval_cell(s["verdict"], s["status"]),
        "next": s.get("next"),
    }


def print_list(records: list[AdapterRecord]) -> None:
    from pipeline.servers.service.review_data import summary

    summaries = [summary(r) for r in records]  # the API's summary: one shape for this list and the service's
    _table(
        LIST_COLUMNS,
        [_list_row(s, contract_cell(r)) for s, r in zip(summaries, records, strict=True)],
        title=f"{len(records)} adapter(s)",
        records=[_list_record(s) for s in summaries],
    )


def print_remote_list(summaries: list[dict[str, Any]], url: str) -> None:
    """`adapters list` through the service: the API's summaries, in the same columns and verdict words."""
    if not summaries:
        console.print(literal(f"no adapters yet on {url}: draftset adapters propose OWNER/NAME"))
        return
    _table(
        LIST_COLUMNS,
        [
            _list_row(s, s["contract"].upper() if s["contract"] in ("fail", "refused") else s["contract"])
            for s in summaries
        ],
        title=f"{len(summaries)} adapter(s) on {url}",
        records=[_list_record(s) for s in summaries],
    )


def print_reasons(record: AdapterRecord) -> None:
    spec = record.spec
    _table(
        ["field", "reason", "review?"],
        [[name, why, "REVIEW" if name in spec.needs_review else ""] for name, why in spec.reasons.items()],
        title="why each field was chosen",
    )


def _result(check: dict[str, Any]) -> str:
    if check["passed"]:  # a check that passed by quarantining a few rows within the tolerance warns
        return "warning" if check.get("severity") == "warn" else "pass"
    return "warning" if str(check.get("severity") or check.get("level")) in verdict.WARNING_LEVELS else "FAIL"


def _sample(data: dict[str, Any]) -> str:
    if "n_records" not in data:  # a result stored before the contract counted them
        return ""
    return f" ({data['n_records']:,} records / {data['n_rows']:,} rows)"


def print_contract(
    result: ContractResult | dict[str, Any], repo_id: str, needs_review: list[str] | None = None, fields: bool = True
) -> verdict.Verdict:
    data = result.to_json() if isinstance(result, ContractResult) else result
    found = verdict.verdict(data, needs_review)
    if fields:
        print_fields(data)
    _table(
        ["check", "result", "detail"],
        [[c["name"], _result(c), c["detail"]] for c in data["checks"]],
        title=f"contract of {repo_id}: {found.headline}{_sample(data)}",
    )
    print_problems(data)
    if data["quarantined"] and not data.get("problems"):  # a result stored before the contract grouped them
        _table(
            ["cause", "rows", "example"],
            [[cause, f"{n:,}", example] for cause, n, example in verdict.rejected_by_cause(data)],
            title="rejected rows by cause (ingest quarantines these)",
        )
    return found


def print_fields(result: ContractResult | dict[str, Any] | None) -> None:
    """The field accounting: every raw field path, how much text it holds and where it went (or why not)."""
    data = result.to_json() if isinstance(result, ContractResult) else result
    fields = (data or {}).get("fields") or []
    if not fields:
        console.print(literal("field accounting: not computed (run `draftset adapters test REPO`)"))
        return
    status = {"unaccounted": "UNACCOUNTED", "carried": "carried"}
    _table(
        ["field", "rows", "avg chars", "median", "share", "went to", "status", "reason / example"],
        [
            [
                f["path"],
                f["rows"],
                f"{f['mean_chars']:.0f}",
                f"{f['median_chars']:.0f}",
                f"{f['share']:.0%}",
                ", ".join(f["where"][:4]),
                status.get(f["status"], f["status"]),
                f["reason"] or (repr(f["example"][:50]) if f["status"] == "unaccounted" else ""),
            ]
            for f in fields
        ],
        title=f"field accounting: {len(fields)} raw field(s), biggest text first "
        f"({sum(f['status'] == 'unaccounted' for f in fields)} unaccounted)",
    )


def print_problems(result: ContractResult | dict[str, Any]) -> None:
    """One line per cause (reject reason, failing or quarantining check) with its count and an example."""
    data = result.to_json() if isinstance(result, ContractResult) else result
    problems = data.get("problems") or []
    if problems:
        _table(
            ["cause", "rows", "level", "example"],
            [[p["cause"], p["count"], p["level"], p["example"][:110]] for p in problems],
            title="problems, one line per cause",
        )


def print_role_counts(record: AdapterRecord) -> None:
    counts = (record.contract or {}).get("role_counts") or {}
    if record.spec.layout == "columns" or not counts:
        return
    role_map = record.spec.role_map
    _table(
        ["raw label", "turns", "maps to"],
        [[label, n, role_map.get(label, "UNMAPPED")] for label, n in counts.items()],
        title="role labels in the sample",
    )


def print_examples(record: AdapterRecord) -> None:
    for g in record.spec.golden:
        canonical = g.expected if g.expected is not None else {"error": g.expected_error}
        if isinstance(canonical, list):
            canonical = _canonical(canonical)
        panels = [
            Panel(
                Syntax(
                    clean_text(json.dumps(g.row, indent=1, ensure_ascii=False, default=str)[:2500]),
                    "json",
                    word_wrap=True,
                ),
                title=f"raw row {g.row_index}",
            ),
            Panel(
                Syntax(clean_text(json.dumps(canonical, indent=1, ensure_ascii=False)[:2500]), "json", word_wrap=True),
                title="canonical record",
            ),
        ]
        console.print(Columns(panels, equal=True, expand=True))


def _canonical(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the fields that carry information, so raw and canonical fit side by side."""
    out = []
    for c in records:
        slim = {k: v for k, v in c.items() if k not in ("source", "messages") and v is not None}
        slim["messages"] = [{k: v for k, v in m.items() if v is not None} for m in c["messages"]]
        out.append(slim)
    return out


def print_preview(record: AdapterRecord, raw: Any, canonical_only: bool, canonical: Any = None) -> None:
    """One raw row → its canonical record (or the reason the adapter rejects it), under the current spec.
    `canonical` is what adapters.review.preview.canonical_of made of the row (computed here when not given)."""
    from adapters.review.preview import canonical_of

    found = canonical_of(record.spec, raw) if canonical is None else canonical
    text = json.dumps(_canonical(found) if isinstance(found, list) else found, indent=1, ensure_ascii=False)
    if canonical_only:
        console.print(literal(text))
        return
    console.print(literal(f"{record.repo_id} row {raw.row_index} under spec {record.spec_hash[:12]} ({record.status})"))
    if isinstance(found, list) and print_turns(record, raw, found):
        return
    panels = [
        Panel(
            Syntax(json.dumps(raw.row, indent=1, ensure_ascii=False, default=str)[:6000], "json", word_wrap=True),
            title=f"raw row {raw.row_index}",
        ),
        Panel(Syntax(text[:6000], "json", word_wrap=True), title="canonical record"),
    ]
    console.print(Columns(panels, equal=True, expand=True))


def print_turns(record: AdapterRecord, raw: Any, found: list[dict[str, Any]]) -> bool:
    """The row turn by turn as the review page shows it (pipeline/servers/service/review_turns.py): each raw
    turn beside the canonical message it became, or why it is not in the record (dropped by the map, after the
    regenerate cut, merged); long text cut with a marker saying how much. False when the layout has no raw
    turn list (the raw row and the record are then printed whole, side by side)."""
    from pipeline.servers.service.review_turns import align

    pairs = align(record.spec, raw.row, found)
    if pairs is None:
        return False
    rows = [
        [
            p["raw_path"] or "(other field)",
            "" if p["raw_label"] is None else str(p["raw_label"]),
            p["raw_text"],
            p["role"] or p["status"],
            p["text"] if p["text"] is not None else p["why"],
        ]
        for p in pairs
    ]
    print_table(["raw turn", "label", "raw text", "→ role", "canonical text (or why not kept)"], rows, title="turns")
    left = [p for p in pairs if p["status"] in ("dropped", "cut")]
    if left:  # said in one line, so a turn the record lacks is never missed in a long table
        by_why = {p["why"]: sum(q["why"] == p["why"] for q in left) for p in left}
        console.print(
            literal(
                f"{len(left)} raw turn(s) not in the record: " + "; ".join(f"{n} × {w}" for w, n in by_why.items())
            ),
            style="yellow",
        )
    extra = {k: v for r in _canonical(found) for k, v in r.items() if k != "messages"}
    if extra:
        console.print(literal("record fields: " + json.dumps(extra, ensure_ascii=False, default=str)[:2000]))
    return True


def print_flags(listed: list[dict[str, Any]], repo_id: str) -> None:
    """Reviewers' flags (adapters.review.flags.listed): open ones first, then stale, then resolved; notes literal."""
    if not listed:
        console.print(literal(f"no reviewer flags on {repo_id}"))
        return
    order = {"open": 0, "stale": 1, "resolved": 2}
    rows = sorted(listed, key=lambda f: (order.get(str(f["state"]), 3), str(f["flagged_at"])))
    counts = {s: sum(f["state"] == s for f in listed) for s in order}
    _table(
        ["flag", "state", "row", "kind", "by", "at", "note", "resolution"],
        [
            [
                f["flag_id"],
                f["state"] + (f" (spec {str(f['spec_hash'])[:8]})" if f["state"] == "stale" else ""),
                f["row_index"],
                f["kind"],
                f["flagged_by"],
                str(f["flagged_at"])[:16].replace("T", " "),
                f["note"] or "",
                f"{f['resolved_by']}: {f['resolution']}" if f["state"] == "resolved" else "",
            ]
            for f in rows
        ],
        title=f"reviewer flags on {repo_id}: {counts['open']} open, {counts['stale']} stale, {counts['resolved']} resolved",
    )


def print_show(record: AdapterRecord) -> None:
    console.print(
        f"[bold]{safe(record.repo_id)}[/]  status [bold]{safe(record.status)}[/]  spec "
        f"{safe(record.spec_hash[:12])}  revision {safe(record.revision[:12])}"
        + safe(
            f"  reviewed by {record.reviewed_by} at {record.reviewed_at:%Y-%m-%d %H:%M} ({record.note or 'no note'})"
            if record.reviewed_by
            else ""
        ),
        highlight=False,
    )
    found = verdict.of_record(record)
    console.print(literal(f"verdict: {found.headline}"), style="bold")
    for blocker in found.blockers():
        console.print(literal(f"  {blocker}"), style="red" if not blocker.startswith(("REVIEW", "flag ")) else "yellow")
    if record.flags:
        print_flags(flags.listed(record.flags, record.spec_hash), record.repo_id)
    print_fields(record.contract)  # first: what every raw field became, before how it was decided
    spec = record.spec
    data = spec.model_dump(mode="json", exclude={"reasons", "golden", "needs_review"}, exclude_none=True)
    console.print(Syntax(clean_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)), "yaml"))
    console.print(
        literal(
            f"# reasons: {len(spec.reasons)} (table below); needs review: "
            f"{', '.join(spec.needs_review) or 'nothing'}; golden rows: {len(spec.golden)} (below); "
            f"the full spec: draftset adapters edit {shell_word(record.repo_id)}"
        )
    )
    print_reasons(record)
    print_role_counts(record)
    if record.contract:
        print_contract(record.contract, record.repo_id, spec.needs_review, fields=False)
        if not record.contract_current:
            console.print(
                f"[yellow]this contract ran on an older spec: run `draftset adapters test {safe(shell_word(record.repo_id))}`[/]"
            )
    print_examples(record)
    console.print(literal(f"verdict: {found.headline}"), style="bold")
    console.print(literal(f"next: {found.next_step(record.repo_id, record.status)}"))
