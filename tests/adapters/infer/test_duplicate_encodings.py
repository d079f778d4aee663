"""A row holding its turns twice (a list column and a JSON-string copy) is one conversation (issue 33, 5e):
the copy's strings are all carried, so it is a duplicate, not a field left unread. A JSON column holding other
text is still named."""

from __future__ import annotations

import json

from adapters.infer.detect import detect
from adapters.infer.field_kinds import coverage
from adapters.infer.infer import build_proposal
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.spec import SourceSpec


def _turns(i: int) -> list[dict]:
    return [
        {"role": "user", "content": f"How do I make test {i} stop failing only on the CI runners?"},
        {"role": "assistant", "content": f"Freeze the clock in fixture {i}, then rerun the suite under load."},
    ]


def test_json_copy_counts_by_its_strings() -> None:
    carried = "\n".join(t["content"] for t in _turns(3)) + "\nuser\nassistant"
    assert coverage(json.dumps(_turns(3)), carried) == 1.0
    assert coverage(json.dumps([{"role": "user", "content": "An unrelated note about the release."}]), carried) < 0.5


def _contract(rows: list[dict]):
    d = detect(rows)
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["t.jsonl"])
    spec = build_proposal(d, list(enumerate(rows)), source, "").spec
    return run_contract(spec, [RawRow(row_index=i, row=r, error=None) for i, r in enumerate(rows)])


def test_turns_twice_pass_the_contract() -> None:
    rows = [{"id": i, "messages": _turns(i), "messages_json": json.dumps(_turns(i))} for i in range(10)]
    assert _contract(rows).passed


def test_a_json_column_of_other_turns_is_still_named() -> None:
    other = [
        {"role": "assistant", "content": f"A different, longer answer number {i} that nobody mapped."}
        for i in range(10)
    ]
    rows = [{"id": i, "messages": _turns(i), "alt_json": json.dumps([other[i]])} for i in range(10)]
    result = _contract(rows)
    assert not result.passed
    assert any(c.name == "fields" and "alt_json" in c.detail for c in result.checks if not c.passed)
