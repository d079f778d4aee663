"""apply_row on hand-written rows: the three field failures, each as its own test, and the bad-row errors."""

from __future__ import annotations

import json

import pytest

from adapters.map.apply import RowError, apply_row
from tests.kits.adapters import make_spec

SHAREGPT = {
    "messages_path": "conversations",
    "role_key": "from",
    "content_key": "value",
    "role_map": {"human": "user", "gpt": "assistant", "system": "system"},
}


def test_human_gpt_labels_map_and_every_row_yields():
    """Field failure 1: `human`/`gpt` where code expected `user`/`assistant` gave zero records."""
    spec = make_spec(**SHAREGPT)
    rows = [
        {
            "id": str(i),
            "conversations": [
                {"from": "human", "value": f"q{i}"},
                {"from": "gpt", "value": f"a{i}"},
                {"from": "human", "value": f"follow-up {i}"},
            ],
        }
        for i in range(20)
    ]
    records = [rec for i, row in enumerate(rows) for rec in apply_row(spec, i, row)]
    assert len(records) == 20
    assert [m.role for m in records[3].messages] == ["user", "assistant", "user"]
    assert records[3].messages[2].content == "follow-up 3"
    assert records[3].source.row_index == 3 and records[3].mode == "regenerate"


def test_trajectory_null_system_text_taken_from_system_prompt():
    """Field failure 2: nebius-style system steps with `text: null` and the prompt in `system_prompt`."""
    spec = make_spec(
        layout="trajectory",
        messages_path="trajectory",
        role_key="role",
        content_key="text",
        role_map={"system": "system", "user": "user", "ai": "assistant"},
        null_policy={"system": "system_prompt"},
        train_flag_key="mask",
    )
    row = {
        "instance_id": "x-1",
        "trajectory": [
            {
                "role": "system",
                "text": None,
                "system_prompt": "SETTING: a shell",
                "mask": False,
                "cutoff_date": "01.01.2023",
            },
            {"role": "user", "text": "ISSUE: size() off by one\nbash-$", "system_prompt": None, "mask": False},
            {"role": "ai", "text": "Let me look.\n```\nls\n```", "system_prompt": None, "mask": True},
            {"role": "user", "text": "core.py\nbash-$", "system_prompt": None, "mask": False},
        ],
    }
    [rec] = apply_row(spec, 7, row)
    assert rec.messages[0].role == "system" and rec.messages[0].content == "SETTING: a shell"
    assert [m.role for m in rec.messages] == ["system", "user", "assistant", "user"]
    assert rec.messages[2].train is True and rec.messages[1].train is False


def test_trajectory_null_text_without_policy_names_the_field():
    spec = make_spec(messages_path="trajectory", content_key="text", role_map={"system": "system", "user": "user"})
    with pytest.raises(RowError) as err:
        apply_row(spec, 0, {"trajectory": [{"role": "system", "text": None}, {"role": "user", "text": "hi"}]})
    assert err.value.field == "trajectory[0].text" and "null" in err.value.reason


def test_native_multi_turn_keeps_every_assistant_turn_trainable():
    """Field failure 3: multi-turn target-native data handled as single-turn lost all but one answer."""
    spec = make_spec(mode="native", messages_path="conversation", reasoning={"delimiters": [["<think>", "</think>"]]})
    turns = []
    for k in range(4):
        turns += [
            {"role": "user", "content": f"step {k}?"},
            {"role": "assistant", "content": f"<think>plan {k}</think>\nanswer {k}"},
        ]
    [rec] = apply_row(spec, 0, {"model": "moonshotai/Kimi-K2.5", "conversation": turns})
    answers = [m for m in rec.messages if m.role == "assistant"]
    assert len(answers) == 4 and all(m.train is True for m in answers)
    assert [m.reasoning for m in answers] == [f"plan {k}" for k in range(4)]
    assert answers[2].content == "answer 2"
    assert rec.messages[-1].role == "assistant"  # native data is not cut


def test_regenerate_context_is_cut_to_end_on_a_user_turn():
    spec = make_spec()
    row = {
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
            {"role": "assistant", "content": "d"},
        ]
    }
    assert [m.content for m in apply_row(spec, 0, row)[0].messages] == ["a", "b", "c"]
    first = make_spec(cut="first_user")
    assert [m.content for m in apply_row(first, 0, row)[0].messages] == ["a"]


def test_unmapped_label_raises_naming_field_and_label():
    spec = make_spec(role_map={"customer": "user", "agent": "assistant"})
    row = {
        "messages": [
            {"role": "customer", "content": "hi"},
            {"role": "supervisor_note", "content": "vip"},
            {"role": "agent", "content": "hello"},
        ]
    }
    with pytest.raises(RowError) as err:
        apply_row(spec, 4, row)
    assert err.value.field == "messages[1].role" and "'supervisor_note'" in err.value.reason


def test_explicit_drop_leaves_the_label_out():
    spec = make_spec(role_map={"customer": "user", "agent": "assistant", "supervisor_note": "drop"})
    row = {
        "messages": [
            {"role": "customer", "content": "hi"},
            {"role": "supervisor_note", "content": "vip"},
            {"role": "agent", "content": "hello"},
            {"role": "customer", "content": "thanks"},
        ]
    }
    assert [m.content for m in apply_row(spec, 0, row)[0].messages] == ["hi", "hello", "thanks"]


def test_json_string_messages_are_decoded():
    spec = make_spec(json_fields=["messages"])
    row = {"messages": json.dumps([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])}
    assert [m.role for m in apply_row(spec, 0, row)[0].messages] == ["system", "user"]
    with pytest.raises(RowError, match="not valid JSON"):
        apply_row(spec, 1, {"messages": "[{broken"})


@pytest.mark.parametrize(
    "content, reason", [(None, "content is null"), (7, "got int"), ("  ", "content is empty"), ({"a": 1}, "got dict")]
)
def test_bad_content_is_a_row_error(content, reason):
    with pytest.raises(RowError) as err:
        apply_row(make_spec(), 0, {"messages": [{"role": "user", "content": content}]})
    assert err.value.field == "messages[0].content" and reason in err.value.reason


@pytest.mark.parametrize(
    "messages, field",
    [(None, "messages"), ("text", "messages"), ([1], "messages[0]"), ([{"content": "x"}], "messages[0].role")],
)
def test_wrong_shapes_name_the_field(messages, field):
    with pytest.raises(RowError) as err:
        apply_row(make_spec(), 0, {"messages": messages})
    assert err.value.field == field


def test_tool_calls_kept_and_empty_content_allowed_with_them():
    spec = make_spec(
        tool_calls_key="tool_calls", role_map={"user": "user", "assistant": "assistant", "tool": "tool"}, mode="native"
    )
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}
    row = {
        "messages": [
            {"role": "user", "content": "list"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "a.py"},
            {"role": "assistant", "content": "one file"},
        ]
    }
    [rec] = apply_row(spec, 0, row)
    assert [c.model_dump() for c in rec.messages[1].tool_calls] == [call] and rec.messages[1].content == ""
    assert rec.messages[2].role == "tool"


def test_reasoning_key_and_thought_markers():
    spec = make_spec(
        mode="native",
        reasoning={
            "key": "reasoning_content",
            "delimiters": [["<|begin_of_thought|>", "<|end_of_thought|>"]],
            "unwrap": [["<|begin_of_solution|>", "<|end_of_solution|>"]],
        },
    )
    row = {
        "messages": [
            {"role": "user", "content": "12+30?"},
            {
                "role": "assistant",
                "content": "<|begin_of_thought|>\nadd\n<|end_of_thought|>\n\n"
                "<|begin_of_solution|>\n42\n<|end_of_solution|>",
            },
            {"role": "user", "content": "and 1+1?"},
            {"role": "assistant", "content": "2", "reasoning_content": "easy"},
        ]
    }
    msgs = apply_row(spec, 0, row)[0].messages
    assert (msgs[1].reasoning, msgs[1].content) == ("add", "42")
    assert (msgs[3].reasoning, msgs[3].content) == ("easy", "2")


def test_columns_layout_and_system_column():
    spec = make_spec(
        layout="columns",
        columns={"prompt": ["instruction", "input"], "response": "output"},
        system_field="system",
        mode="native",
    )
    [rec] = apply_row(spec, 0, {"instruction": "Review:", "input": "x = 1", "output": "fine", "system": "be brief"})
    assert [(m.role, m.content) for m in rec.messages] == [
        ("system", "be brief"),
        ("user", "Review:\n\nx = 1"),
        ("assistant", "fine"),
    ]
    regen = make_spec(layout="columns", columns={"prompt": ["question"], "response": "answer"})
    assert [m.role for m in apply_row(regen, 0, {"question": "2+2?", "answer": None})[0].messages] == ["user"]
    with pytest.raises(RowError, match="missing"):
        apply_row(regen, 0, {"answer": "4"})


def test_native_without_trainable_turn_is_rejected():
    spec = make_spec(mode="native", train_flag_key="mask")
    row = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "mask": False}]}
    with pytest.raises(RowError, match="no trainable assistant turn"):
        apply_row(spec, 0, row)


def test_same_row_gives_same_id_and_hash():
    spec = make_spec(**SHAREGPT)
    row = {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}
    a, b = apply_row(spec, 5, row)[0], apply_row(make_spec(**SHAREGPT), 5, row)[0]
    assert a.id == b.id and a.content_hash() == b.content_hash()
    assert apply_row(spec, 6, row)[0].id != a.id
