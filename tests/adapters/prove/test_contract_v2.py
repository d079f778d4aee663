"""Contract checks of record v2: tool-call arguments, tool turns answering calls, undeclared tools (a warning),
media refused by name, preference and label policies."""

from __future__ import annotations

import json

from adapters.prove.contract import run_contract
from tests.kits.adapters import make_spec, raw

TOOLS = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def _call(name: str, args: str, cid: str = "c1") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def _row(args: str = '{"cmd": "ls"}', tool_id: str | None = "c1", declared: bool = True) -> dict:
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}] if declared else []
    return {
        "tools": json.dumps(tools),
        "messages": [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": "", "tool_calls": [_call("bash", args)]},
            {"role": "tool", "content": "a.py", "tool_call_id": tool_id},
            {"role": "assistant", "content": "one file"},
        ],
    }


def _spec(**kw):
    return make_spec(
        mode="native",
        tool_calls_key="tool_calls",
        tool_call_id_key="tool_call_id",
        tools_field="tools",
        role_map=TOOLS,
        **kw,
    )


def _check(result, name):
    return next(c for c in result.checks if c.name == name)


def test_tool_contract_passes_on_a_well_formed_trajectory():
    result = run_contract(_spec(), raw([_row()] * 4))
    assert result.passed and result.verdict == "pass"
    assert _check(result, "tool_links").passed and _check(result, "tool_arguments").passed


def test_arguments_that_are_not_a_json_object_fail():
    result = run_contract(_spec(), raw([_row(args="ls -la")] * 2))
    assert not result.passed and "not a JSON object" in _check(result, "tool_arguments").detail


def test_a_tool_turn_answering_no_call_fails():
    result = run_contract(_spec(), raw([_row(tool_id="c9")] * 2))
    assert not result.passed and "answers no earlier call" in _check(result, "tool_links").detail


def test_calls_to_undeclared_tools_are_flagged_without_failing():
    result = run_contract(_spec(), raw([_row(declared=False)] * 2))
    check = _check(result, "tools_declared")
    assert result.passed and not check.passed and check.level == "warning" and "'bash'" in check.detail


def test_media_rows_are_a_named_refusal_not_a_silent_pass():
    spec = make_spec(mode="native", media={"fields": ["image"], "placeholders": ["<image>"]})
    rows = [
        {
            "image": "a.png",
            "messages": [{"role": "user", "content": "<image> what is it?"}, {"role": "assistant", "content": "a cat"}],
        }
    ] * 3
    result = run_contract(spec, raw(rows))
    assert not result.passed and result.verdict == "refused: media"
    assert "3 of 3 rows carry media" in _check(result, "media").detail


def test_placeholder_without_media_is_caught():
    spec = make_spec(mode="native")
    rows = [
        {"messages": [{"role": "user", "content": "<image>\nwhat is it?"}, {"role": "assistant", "content": "a cat"}]}
    ] * 2
    result = run_contract(spec, raw(rows))
    assert not _check(result, "media").passed and result.verdict == "refused: media"


def test_preference_and_label_policies_hold():
    spec = make_spec(mode="native", messages_path="chosen", preference={"rejected": "rejected"})
    p = [{"role": "user", "content": "2+2?"}]
    rows = [
        {"chosen": p + [{"role": "assistant", "content": "4"}], "rejected": p + [{"role": "assistant", "content": "5"}]}
    ] * 3
    result = run_contract(spec, raw(rows))
    assert result.passed and "pairs recorded" in _check(result, "preference").detail
    kto = make_spec(
        layout="columns",
        columns={"prompt": ["prompt"], "response": "completion"},
        mode="native",
        label_field="label",
        min_yield=0.3,
    )
    rows = [{"prompt": "q", "completion": "a", "label": i % 2 == 0} for i in range(6)]
    result = run_contract(kto, raw(rows))
    assert result.passed and result.reject_reasons == {"undesirable answer": 3}
