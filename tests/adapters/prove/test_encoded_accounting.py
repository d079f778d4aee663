"""Field accounting follows values through decoding: a JSON-string field counts as read when what it decodes to
reaches the record, a field that decodes to nothing (`"[]"`) holds nothing on that row, and a compressed blob is
judged by the text inside it (#33: LLaMA-Factory's glaive demos were refused for their `tools` column)."""

from __future__ import annotations

import base64
import json
import zlib

from adapters.infer.accounting import account, proposed_drops
from adapters.infer.detect import detect
from adapters.prove.contract import run_contract
from adapters.read.encoded import decode, empty, remarked, texts
from adapters.read.source import RawRow
from tests.kits.adapters import make_spec

TOPICS = ["binary search", "rate limiting", "Docker layers", "unit tests", "HTTP caching", "regular expressions"]
DECL = {
    "name": "run_shell",
    "description": "Run one shell command in the repository and return what it printed",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def _rows(n: int, tools_every: int) -> list[dict]:
    """ShareGPT chats; only every `tools_every`-th row declares a tool, the others hold `"[]"`."""
    rows = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        turns = [
            {"from": "human", "value": f"How do I test {topic} in a service with {i} users?"},
            {"from": "gpt", "value": f"Write a small test for {topic} first; case {i} shows why it matters."},
        ]
        rows.append({"conversations": turns, "tools": json.dumps([DECL] if i % tools_every == 0 else [])})
    return rows


def _spec(**fields):
    return make_spec(
        layout="messages",
        messages_path="conversations",
        role_key="from",
        content_key="value",
        role_map={"human": "user", "gpt": "assistant"},
        **fields,
    )


def test_a_tools_column_mostly_empty_json_is_still_detected_as_declarations() -> None:
    rows = _rows(30, tools_every=3)  # two thirds of the rows declare nothing: "[]"
    assert detect(rows).fields.get("tools_field") == "tools"


def test_declarations_read_through_their_json_are_carried_and_empty_rows_hold_nothing() -> None:
    rows = _rows(30, tools_every=3)
    table = {r.path: r for r in account(_spec(tools_field="tools"), list(enumerate(rows)))}
    assert table["tools"].status == "carried" and table["tools"].where == ["tool declaration"]
    assert table["tools"].rows == 10 and table["tools"].held == "JSON string"  # the "[]" rows are not counted


def test_unread_json_declarations_fail_loudly_instead_of_being_dropped_as_short_metadata() -> None:
    rows = _rows(30, tools_every=2)  # half "[]": by raw length a short-valued column
    spec = _spec()
    assert "tools" not in proposed_drops(spec, list(enumerate(rows)))
    result = run_contract(spec, [RawRow(i, r, None) for i, r in enumerate(rows)])
    fields = next(c for c in result.checks if c.name == "fields")
    assert not fields.passed and "field 'tools'" in fields.detail and "JSON string decoded" in fields.detail


def test_a_compressed_blob_of_turns_is_judged_by_its_text_not_dropped_as_an_identifier() -> None:
    rows = _rows(20, tools_every=1)
    for i, row in enumerate(rows):
        history = [{"role": "user", "content": f"Earlier I asked about {TOPICS[i % 6]} and the cache of case {i}."}]
        row["history"] = base64.b64encode(zlib.compress(json.dumps(history).encode())).decode()
    spec = _spec(tools_field="tools")
    table = {r.path: r for r in account(spec, list(enumerate(rows)))}
    assert table["history"].status == "unaccounted" and table["history"].held == "zlib blob (base64)"
    assert "Earlier I asked" in table["history"].example
    assert "history" not in proposed_drops(spec, list(enumerate(rows)))


def test_decoding_helpers() -> None:
    assert decode("[]") == ("JSON string", []) and empty([]) and empty([{"a": None}]) and not empty([0])
    assert decode("plain words, not JSON") is None and decode("[1] is a citation") is None
    nested = json.dumps({"name": "f", "arguments": json.dumps({"path": "a b"})})
    assert texts(decode(nested)[1]) == ["f", "a b"]  # a JSON string inside a JSON string is decoded too
    again = json.loads(remarked(nested, lambda t: "X"))
    assert again["name"] == "X" and json.loads(again["arguments"]) == {"path": "X"}
    bomb = base64.b64encode(zlib.compress(b"a" * 50_000_000)).decode()
    how, text = decode(bomb)
    assert how == "zlib blob (base64)" and len(text) <= 1024 * 1024  # decompression is capped
