"""Canonical record v2: tools, structured calls with ids, tool turns, media parts, versioning, v1 upgrade."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from adapters.map.apply import RowError, apply_row
from adapters.records import RECORD_VERSION, Conversation
from tests.kits.adapters import make_spec

SOURCE = {"repo_id": "lab/x", "revision": "r", "config": "default", "split": "train", "row_index": 0}


def test_v1_record_is_upgraded_on_read_with_its_tool_calls_normalised():
    v1 = {
        "id": "a",
        "source": SOURCE,
        "category": "agentic",
        "mode": "native",
        "messages": [
            {"role": "user", "content": "15% of 240?", "reasoning": None, "tool_calls": None, "train": None},
            {
                "role": "assistant",
                "content": "",
                "reasoning": None,
                "train": True,
                "tool_calls": [{"name": "percent_of", "arguments": {"p": 15, "x": 240}}],
            },
        ],
    }
    conv = Conversation.model_validate_json(json.dumps(v1))
    assert conv.record_version == RECORD_VERSION == 2
    call = conv.messages[1].tool_calls[0]
    assert (call.type, call.function.name, json.loads(call.function.arguments)) == (
        "function",
        "percent_of",
        {"p": 15, "x": 240},
    )
    assert call.id  # a v1 call without an id gets a stable one
    again = Conversation.model_validate_json(conv.model_dump_json())
    assert again == conv  # v2 round-trips unchanged


def test_unknown_record_version_is_refused_by_name():
    data = {
        "record_version": 3,
        "id": "a",
        "source": SOURCE,
        "category": "c",
        "mode": "native",
        "messages": [{"role": "user", "content": "x"}],
    }
    with pytest.raises(ValidationError, match="record_version 3 is not readable"):
        Conversation.model_validate_json(json.dumps(data))


def test_extra_fields_are_forbidden_at_every_level():
    base = {"record_version": 2, "id": "a", "source": SOURCE, "category": "c", "mode": "native"}
    with pytest.raises(ValidationError):
        Conversation.model_validate({**base, "messages": [{"role": "user", "content": "x", "weight": 1.0}]})
    with pytest.raises(ValidationError):
        Conversation.model_validate(
            {
                **base,
                "messages": [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}, "index": 0}
                        ],
                    }
                ],
            }
        )


def test_openai_tool_trajectory_keeps_tools_call_ids_and_tool_turn_links():
    spec = make_spec(
        mode="native",
        tool_calls_key="tool_calls",
        tools_field="tools",
        tool_call_id_key="tool_call_id",
        tool_name_key="name",
        role_map={"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"},
    )
    tools = [
        {
            "type": "function",
            "function": {"name": "bash", "description": "run", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    row = {
        "tools": json.dumps(tools),
        "messages": [
            {"role": "user", "content": "fix it"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_9",
                        "type": "function",
                        "index": None,
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {"role": "tool", "content": "a.py", "tool_call_id": "call_9", "name": "bash"},
            {"role": "assistant", "content": "done"},
        ],
    }
    [rec] = apply_row(spec, 0, row)
    assert rec.tools[0].function.name == "bash"
    assert rec.messages[1].tool_calls[0].id == "call_9"
    assert (rec.messages[2].tool_call_id, rec.messages[2].name) == ("call_9", "bash")
    export = rec.to_export()
    assert export["tools"][0]["function"]["name"] == "bash" and export["conversations"][2]["tool_call_id"] == "call_9"


def test_llamafactory_function_call_and_observation_turns_become_calls_and_linked_results():
    spec = make_spec(
        mode="native",
        messages_path="conversations",
        role_key="from",
        content_key="value",
        tools_field="tools",
        role_map={"human": "user", "gpt": "assistant", "function_call": "tool_call", "observation": "tool"},
    )
    row = {
        "tools": json.dumps(
            [{"name": "weather", "description": "w", "parameters": {"city": {"type": "str", "description": "c"}}}]
        ),
        "conversations": [
            {"from": "human", "value": "weather in Oslo?"},
            {"from": "function_call", "value": json.dumps({"name": "weather", "arguments": {"city": "Oslo"}})},
            {"from": "observation", "value": '{"temp": 3}'},
            {"from": "gpt", "value": "3 degrees"},
        ],
    }
    [rec] = apply_row(spec, 0, row)
    assert [m.role for m in rec.messages] == ["user", "assistant", "tool", "assistant"]
    call = rec.messages[1].tool_calls[0]
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    assert rec.messages[2].tool_call_id == call.id and rec.messages[2].name == "weather"
    assert rec.tools[0].function.parameters["properties"]["city"]["type"] == "string"


@pytest.mark.parametrize(
    "fmt, text, name, args",
    [
        ("hermes", '<tool_call>\n{"name": "get", "arguments": {"id": 1}}\n</tool_call>', "get", {"id": 1}),
        ("functioncall", 'Sure. <functioncall> {"name": "get", "arguments": \'{"id": 1}\'}', "get", {"id": 1}),
        (
            "function_tag",
            "Look.\n<function=bash>\n<parameter=command>ls -l</parameter>\n</function>",
            "bash",
            {"command": "ls -l"},
        ),
    ],
)
def test_tool_calls_written_in_text_are_parsed(fmt, text, name, args):
    spec = make_spec(mode="native", text_tool_calls=fmt)
    row = {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": text},
            {"role": "user", "content": "result"},
            {"role": "assistant", "content": "ok"},
        ]
    }
    [rec] = apply_row(spec, 0, row)
    call = rec.messages[1].tool_calls[0]
    assert call.function.name == name and json.loads(call.function.arguments) == args
    assert "<" not in rec.messages[1].content


def test_media_rows_refused_for_text_targets_and_kept_as_parts_when_asked():
    row = {
        "image": "images/0001.jpg",
        "conversations": [{"from": "human", "value": "<image>\nWhat is this?"}, {"from": "gpt", "value": "A cat."}],
    }
    fields = dict(
        messages_path="conversations",
        role_key="from",
        content_key="value",
        mode="native",
        role_map={"human": "user", "gpt": "assistant"},
    )
    refuse = make_spec(**fields, media={"fields": ["image"], "placeholders": ["<image>"]})
    with pytest.raises(RowError, match="^image: media"):
        apply_row(refuse, 0, row)
    keep = make_spec(**fields, media={"fields": ["image"], "placeholders": ["<image>"], "policy": "keep"})
    [rec] = apply_row(keep, 0, row)
    assert [p.model_dump() for p in rec.messages[0].parts] == [{"type": "image", "ref": "images/0001.jpg"}]


def test_preference_pair_recorded_and_rejected_never_trained():
    spec = make_spec(mode="native", messages_path="chosen", preference={"rejected": "rejected"})
    prompt = [{"role": "user", "content": "2+2?"}]
    row = {
        "chosen": prompt + [{"role": "assistant", "content": "4"}],
        "rejected": prompt + [{"role": "assistant", "content": "5"}],
    }
    [rec] = apply_row(spec, 0, row)
    assert rec.messages[-1].content == "4" and rec.messages[-1].train is True
    assert [(m.content, m.train) for m in rec.preference.rejected] == [("5", False)]
    regen = make_spec(messages_path="chosen", preference={"rejected": "rejected"})
    [r2] = apply_row(regen, 0, row)
    assert [m.role for m in r2.messages] == ["user"] and r2.preference.rejected[0].content == "5"


def test_kto_undesirable_answers_are_never_trained():
    spec = make_spec(
        layout="columns", columns={"prompt": ["prompt"], "response": "completion"}, mode="native", label_field="label"
    )
    [good] = apply_row(spec, 0, {"prompt": "q", "completion": "a", "label": True})
    assert good.label is True and good.messages[-1].train is True
    with pytest.raises(RowError, match="undesirable"):
        apply_row(spec, 1, {"prompt": "q", "completion": "bad", "label": False})
    regen = make_spec(layout="columns", columns={"prompt": ["prompt"], "response": "completion"}, label_field="label")
    [r] = apply_row(regen, 1, {"prompt": "q", "completion": "bad", "label": False})
    assert r.label is False and [m.role for m in r.messages] == ["user"]


def test_unlabelled_alternating_utterances_and_transcripts():
    utter = make_spec(layout="utterances", messages_path="dialog", first_role="user", mode="native")
    [rec] = apply_row(utter, 0, {"dialog": ["hi", "hello!", "how are you?", "fine."]})
    assert [m.role for m in rec.messages] == ["user", "assistant", "user", "assistant"]
    hh = make_spec(
        layout="transcript",
        transcript={"field": "chosen", "markers": {"Human:": "user", "Assistant:": "assistant"}},
        mode="native",
    )
    [rec] = apply_row(hh, 0, {"chosen": "\n\nHuman: hi there\n\nAssistant: hello\n\nHuman: bye\n\nAssistant: ciao"})
    assert [(m.role, m.content) for m in rec.messages][-2:] == [("user", "bye"), ("assistant", "ciao")]


def test_new_spec_fields_do_not_change_the_hash_of_existing_specs():
    spec = make_spec()
    data = spec.model_dump(mode="json")
    assert "tools_field" in data and "tools_field" not in spec.hashed_payload()
    assert make_spec(tools_field="tools").spec_hash() != spec.spec_hash()


def test_record_ids_are_the_provenance_hash():
    from adapters.records import record_id

    [rec] = apply_row(make_spec(), 41, {"messages": [{"role": "user", "content": "q"}]})
    assert rec.id == record_id("lab/data", "default", "train", 41)  # resume-by-id across versions needs this


def test_text_views_have_one_meaning_each():
    """prompt_text = user turns (identity); context_text = what the target reads; response_text = what it answers."""
    conv = Conversation.model_validate(
        {
            "id": "t",
            "source": SOURCE,
            "category": "agentic",
            "mode": "native",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "15% of 240?"},
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning": "use the tool",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "pct", "arguments": '{"p": 15}'}}
                    ],
                },
                {"role": "tool", "content": "36", "tool_call_id": "c1"},
                {"role": "assistant", "content": "36"},
            ],
        }
    )
    assert conv.prompt_text() == "15% of 240?"
    assert conv.context_text() == "be brief\n15% of 240?\n36"
    assert conv.response_text() == 'use the tool\n{"p": 15}\n36'
