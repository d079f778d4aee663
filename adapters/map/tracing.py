"""Tracing what the apply step read: probe one field path of a raw row and see where it lands.

Each field path is replaced, in a copy of a row, by a unique marker (strings) or a changed value
(numbers, booleans); the row is applied again and the marker looked for in the record. Found at
messages[i].content → "assistant text"; not found but the record changed or the row was refused → the
field shapes the record (a role label, a flag); the record unchanged → the applier never read it.
Regenerate-mode specs are also applied as native data, so an answer column reads "assistant text
(regenerated)" rather than "unread". The accounting table (adapters/infer/accounting.py) is built on this.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from adapters.map.apply import RowMapper
from adapters.map.markup import fragments
from adapters.read.encoded import remarked
from adapters.records import Conversation
from adapters.row_fields import decode_json_field
from adapters.spec import AdapterSpec

MARK = "QQM{}Q{}QQ"  # ascii: survives strip(), JSON re-serialisation and joins untouched
UNREAD, STRUCTURE = "unread", "shapes the record"


def leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) of every non-empty string, number and boolean; lists are `[]` in the path.

    An explicit stack, not recursion: long agent trajectories have tens of thousands of leaves per sample."""
    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{path}.{k}" if path else str(k), sub) for k, sub in reversed(v.items()))
        elif isinstance(v, list):
            inner = f"{path}[]"
            stack.extend((inner, sub) for sub in reversed(v))
        elif isinstance(v, str):
            if v.strip():
                out.append((path, v))
        elif isinstance(v, (bool, int, float)):
            out.append((path, v))
    return out


def split_path(path: str) -> list[str]:
    return [p for p in re.split(r"\.|(\[\])", path) if p]


def replace_at(value: Any, parts: list[str], i: int, fn: Any) -> Any:
    """A copy of `value` with every leaf at `parts` replaced by fn(leaf); untouched branches are shared."""
    if i == len(parts):
        return fn(value)
    step = parts[i]
    if step == "[]":
        return [replace_at(v, parts, i + 1, fn) for v in value] if isinstance(value, list) else value
    if isinstance(value, dict) and step in value:
        return {**value, step: replace_at(value[step], parts, i + 1, fn)}
    return value


def locations(rec: Conversation) -> Iterator[tuple[str, int, str]]:
    """(destination, message index, text) of every string the record carries."""
    for i, m in enumerate(rec.messages):
        yield ("system prompt" if m.role == "system" else f"{m.role} text"), i, m.content
        if m.reasoning:
            yield "reasoning", i, m.reasoning
        for c in m.tool_calls or []:
            yield "tool call", i, c.function.name + " " + c.function.arguments
        for p in m.parts or []:
            yield "media part", i, p.ref
        for value in (m.name, m.tool_call_id):
            if value:
                yield "tool link", i, value
    for t in rec.tools or []:
        yield "tool declaration", -1, t.model_dump_json()
    if rec.preference:
        for m in rec.preference.rejected:
            yield "rejected answer", -1, m.content + " " + (m.reasoning or "")


def _fingerprint(recs: list[Conversation] | None) -> Any:
    return None if recs is None else [(r.content_hash(), r.label, r.preference) for r in recs]


class Tracer:
    """Applies probes to rows: the spec as it is, then (regenerate-mode specs) as native data."""

    def __init__(self, spec: AdapterSpec):
        self.spec = spec
        self.mappers = [RowMapper(spec)]
        if spec.mode == "regenerate":
            self.mappers.append(RowMapper(spec.model_copy(update={"mode": "native"})))
        self.key_names = _key_names(spec)

    def apply(self, index: int, row: dict[str, Any]) -> list[list[Conversation] | None]:
        out: list[list[Conversation] | None] = []
        for m in self.mappers:
            try:
                out.append(m.apply(index, row))
            except Exception:  # noqa: BLE001 - a probe that breaks the row is itself the answer ("shapes")
                out.append(None)
        return out

    def destinations(self, path: str, pid: int, base: list, probed: list) -> set[str]:
        """Where the markers of probe `pid` went; else whether the probe changed anything at all."""
        needle = MARK.format(pid, "")[:-2]
        found: set[str] = set()
        for k, recs in enumerate(probed):
            for rec in recs or []:
                for dest, _, text in locations(rec):
                    if needle in text:
                        if k == 0:
                            found.add(dest)
                        elif not any(f.startswith(dest) for f in found):
                            found.add(dest + (" (regenerated)" if dest == "assistant text" else " (after the cut)"))
        if found:
            return found
        if any(_fingerprint(p) != _fingerprint(b) for p, b in zip(probed, base)):
            return {self.key_names.get(split_path(path)[-1], STRUCTURE)}
        return {UNREAD}


def parsed_into(text: str, base: list) -> set[str]:
    """For a text field that shapes the record (a transcript, a JSON string): which destinations carry
    its lines. Containment is the cross-check here, where a marker cannot survive the parse."""
    lines = fragments(text)
    if not lines:
        return set()
    found: set[str] = set()
    hit = 0
    for line in lines:
        dests = {d for recs in base for rec in recs or [] for d, _, t in locations(rec) if line in t}
        if dests:
            hit += len(line)
            found |= dests
    return found if hit >= 0.5 * sum(len(ln) for ln in lines) else set()


def _key_names(spec: AdapterSpec) -> dict[str, str]:
    """The spec's own per-turn keys: what a probed key that changed the record (without a marker) is."""
    names = {
        spec.role_key: "role label",
        spec.train_flag_key: "training flag",
        spec.tool_call_id_key: "tool link",
        spec.tool_name_key: "tool link",
        spec.label_field: "label",
    }
    if spec.preference:
        names[spec.preference.chosen_score] = "preference score"
        names[spec.preference.rejected_score] = "preference score"
    return {k.split(".")[-1]: v for k, v in names.items() if k}


def decoded_row(spec: AdapterSpec, row: dict[str, Any]) -> dict[str, Any] | None:
    if not spec.json_fields:
        return row
    row = dict(row)
    try:
        for name in spec.json_fields:
            row[name] = decode_json_field(row.get(name), name)
    except ValueError:
        return None
    return row


def probe_value(value: Any, pid: int, counter: list[int]) -> Any:
    counter[0] += 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7919
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str) and value.strip():
        # a JSON string is probed through its decoding: each text inside it marked, the JSON encoded again, so
        # a field counts as read when what it decodes to reaches the record (adapters/read/encoded.py)
        return remarked(value, lambda _text: _next_mark(pid, counter)) or MARK.format(pid, counter[0])
    return value


def _next_mark(pid: int, counter: list[int]) -> str:
    counter[0] += 1
    return MARK.format(pid, counter[0])
