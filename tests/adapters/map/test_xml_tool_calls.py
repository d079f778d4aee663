"""Tool calls written as XML elements in assistant text become structured calls, and results written under the
user's name inside a result element become tool turns (issue 33, 5c). Before: `<invoke>` calls stayed text, and
`<tool_response>` user turns stayed user turns."""

from __future__ import annotations

import json

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.map.apply import RowMapper
from adapters.map.toolcalls import parse_text_calls, result_tag
from adapters.spec import SourceSpec

INVOKE = (
    'Let me look.\n<function_calls>\n<invoke name="run_shell"><parameter name="command">pytest -q</parameter>'
    '<parameter name="timeout">30</parameter></invoke>\n</function_calls>'
)


def test_invoke_elements_parse_into_calls_and_leave_the_prose() -> None:
    calls, rest = parse_text_calls("invoke", INVOKE, "call_1")
    assert [c["function"]["name"] for c in calls] == ["run_shell"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "pytest -q", "timeout": 30}
    assert rest == "Let me look."
    assert parse_text_calls("invoke", "no call here", "c") == ([], "no call here")


def test_result_tag_needs_the_whole_turn_wrapped() -> None:
    assert result_tag('<tool_response>\n{"ok": 1}\n</tool_response>') == "tool_response"
    assert result_tag("see <tool_response>x</tool_response> above") is None
    assert result_tag("plain question?") is None


def _rows(n: int = 8) -> list[dict]:
    rows = []
    for i in range(n):
        rows.append(
            {
                "conversations": [
                    {"from": "human", "value": f"Why does test {i} fail on CI but not locally?"},
                    {"from": "gpt", "value": INVOKE},
                    {"from": "human", "value": f"<function_results>\n{i} failed, 3 passed\n</function_results>"},
                    {"from": "gpt", "value": f"Test {i} depends on the clock; freeze time in the fixture."},
                ]
            }
        )
    return rows


def test_invoke_calls_and_user_written_results_map_to_calls_and_tool_turns() -> None:
    rows = _rows()
    d = detect(rows)
    assert d.fields["text_tool_calls"] == "invoke"
    assert d.fields["text_tool_results"] == ["function_results"]
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["t.jsonl"])
    spec = build_proposal(d, list(enumerate(rows)), source, "").spec.model_copy(update={"mode": "native"})
    rec = RowMapper(spec).apply(0, rows[0])[0]
    assert [m.role for m in rec.messages] == ["user", "assistant", "tool", "assistant"]
    assert rec.messages[1].tool_calls and rec.messages[2].tool_call_id == rec.messages[1].tool_calls[0].id


def test_a_user_turn_after_a_call_that_is_not_wrapped_stays_the_user() -> None:
    rows = _rows()
    rows[0]["conversations"][2]["value"] = "Never mind, what about the linter?"
    d = detect(rows)
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["t.jsonl"])
    spec = build_proposal(d, list(enumerate(rows)), source, "").spec.model_copy(update={"mode": "native"})
    from adapters.row_fields import RowError

    try:
        rec = RowMapper(spec).apply(0, rows[0])[0]
    except RowError:
        return  # a call with no result is refused loudly: fine
    assert rec.messages[2].role == "user"
