"""Apply an AdapterSpec to one raw row: the only place raw rows become canonical Conversations.

The spec is compiled once into a `RowMapper` (field lookups, role map, flags resolved up front) so the
per-row work is a handful of dict reads; `apply_row` caches the mapper per spec object. Turns are
built as plain dicts and the record is validated once at the end (one pydantic-core call is faster
than constructing each Message, and keeps the strict model as the last word on every record). A bad row
raises `RowError(field, reason)` naming the exact field (e.g. `conversations[3].from`), never returns
a half-mapped record and never drops a turn the spec did not explicitly drop. Named verdicts start
their reason with the verdict (`media ...`, `undesirable ...`) so counts group by it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import ValidationError

from adapters.map.candidates import choose_answer
from adapters.map.declarations import tools_in_text
from adapters.map.toolcalls import ToolFormatError, link_tool_turns, normalize_tools, parse_text_calls, result_tag
from adapters.map.turns import TurnReader, split_transcript
from adapters.read import media as media_mod
from adapters.records import RECORD_VERSION, Conversation
from adapters.row_fields import RowError, as_tool_calls, decode_json_field, get_path, type_name
from adapters.spec import AdapterSpec, PreferenceSpec
from catalog import limits

Turn = dict[str, Any]  # a Message as a plain dict until the record is validated


def message(
    role: str,
    content: str,
    reasoning: str | None = None,
    tool_calls: list | None = None,
    train: bool | None = None,
    **extra: Any,
) -> Turn:
    turn = {"role": role, "content": content, "reasoning": reasoning, "tool_calls": tool_calls, "train": train}
    turn.update({k: v for k, v in extra.items() if v is not None})
    return turn


# The strict model's compiled validator, called directly (Conversation.model_validate adds a Python layer per row).
VALIDATE = Conversation.__pydantic_validator__.validate_python


class RowMapper:
    """A spec compiled for fast application to many rows."""

    def __init__(self, spec: AdapterSpec):
        self.spec = spec
        src = spec.source
        self.source_key = (src.repo_id, src.revision, src.config, src.split)
        # record_id's hash over the fixed provenance prefix, copied per row (the same ids, less work)
        self.id_prefix = hashlib.sha1(f"{src.repo_id}|{src.config}|{src.split}|".encode())
        self.json_fields = tuple(spec.json_fields)
        self.native = spec.mode == "native"
        self.turns = TurnReader(spec, RowError)
        self.media = spec.media
        self.keep_media = bool(spec.media and spec.media.policy == "keep")
        targets = set(spec.role_map.values())
        # Tool-turn linking and media checks only where they can find something (they cost per row).
        self.tools_possible = bool(targets & {"tool", "tool_call"} or spec.tool_calls_key or spec.text_tool_calls)
        self.media_possible = bool(spec.media or spec.parts_key or spec.layout in ("messages", "trajectory"))

    # -- public ------------------------------------------------------------------------------
    def apply(self, row_index: int, row: Any) -> list[Conversation]:
        if not isinstance(row, dict):
            raise RowError("<row>", f"expected an object, got {type_name(row)}")
        if self.json_fields:
            row = dict(row)
            for name in self.json_fields:
                row[name] = decode_json_field(row.get(name), name)
        spec = self.spec
        messages: list[Turn] = []
        if spec.system_field:
            system = get_path(row, spec.system_field)
            if system is not None and not isinstance(system, str):
                raise RowError(spec.system_field, f"system prompt must be a string, got {type_name(system)}")
            if system and system.strip():
                messages.append(message("system", system))
        turns = self.turns.read(row)
        if messages and turns and turns[0]["role"] == "system":
            messages = []  # the turn list carries its own system prompt: it wins over the column
        messages += turns
        record: dict[str, Any] = {}
        if spec.candidates:  # several answers to one prompt: the named policy picks (adapters/map/candidates.py)
            messages, loser = choose_answer(spec.candidates, row, messages, self.turns)
            if loser:
                record["preference"] = {"rejected": loser}
        if spec.tools_field:
            try:
                record["tools"] = normalize_tools(get_path(row, spec.tools_field))
            except ValueError as exc:
                raise RowError(spec.tools_field, str(exc)) from None
        elif spec.tools_in_system:  # declarations written as JSON in the system prompt (adapters/map/declarations.py)
            record["tools"] = tools_in_text(next((m["content"] for m in messages if m["role"] == "system"), None))
        if spec.text_tool_calls:
            self._calls_from_text(spec.text_tool_calls, messages)
        if spec.text_tool_results:
            _results_from_text(spec.text_tool_results, messages)
        if self.tools_possible:
            link_tool_turns(messages)
        if self.media_possible:
            self._media(row, messages)
        if spec.preference:
            record["preference"] = self._preference(spec.preference, row, messages)
        if spec.label_field:
            record["label"] = self._label(spec.label_field, row, messages)
        messages = self._finish(messages)
        repo, revision, config, split = self.source_key
        try:
            return [
                VALIDATE(
                    {
                        "record_version": RECORD_VERSION,
                        "id": self._id(row_index),
                        "source": {
                            "repo_id": repo,
                            "revision": revision,
                            "config": config,
                            "split": split,
                            "row_index": row_index,
                        },
                        "category": spec.category,
                        "mode": spec.mode,
                        "messages": messages,
                        **record,
                    }
                )
            ]
        except ValidationError as exc:  # a value the checks above missed: still one row's error, never a crash
            first = exc.errors()[0]
            raise RowError(".".join(map(str, first["loc"])) or "<record>", first["msg"]) from None

    def _id(self, row_index: int) -> str:
        h = self.id_prefix.copy()
        h.update(str(row_index).encode())
        return h.hexdigest()[:20]

    # -- tool calls written in text ------------------------------------------------------------
    def _calls_from_text(self, fmt: str, messages: list[Turn]) -> None:
        for i, m in enumerate(messages):
            if m["role"] != "assistant" or m.get("tool_calls"):
                continue
            try:
                calls, text = parse_text_calls(fmt, m["content"], f"call_{i}")
            except ToolFormatError as exc:
                raise RowError(f"messages[{i}].content", f"tool call in text: {exc}") from None
            if calls:
                m["tool_calls"], m["content"] = calls, text

    # -- media ---------------------------------------------------------------------------------
    def _media(self, row: dict[str, Any], messages: list[Turn]) -> None:
        spec = self.media
        found = [p for m in messages if "parts" in m for p in m["parts"]]
        row_parts = media_mod.row_parts(row, spec.fields) if spec else []
        marks = media_mod.placeholders_in([m["content"] for m in messages]) if spec and spec.placeholders else []
        if not (found or row_parts or marks):
            return
        if not self.keep_media:
            kinds = sorted({p["type"] for p in found + row_parts}) or marks
            where = ", ".join(spec.fields) if spec and spec.fields else "message content"
            raise RowError(
                where,
                f"media ({'/'.join(kinds)}) for a text-only target: refused so it is not "
                "trained as text without its media",
            )
        if row_parts:  # media given beside the turns belong to the first user turn (LLaVA, VQA sets)
            first = next((m for m in messages if m["role"] == "user"), messages[0] if messages else None)
            if first is not None:
                first["parts"] = (first.get("parts") or []) + row_parts

    # -- preference and labels -----------------------------------------------------------------
    def _preference(self, pref: PreferenceSpec, row: dict[str, Any], messages: list[Turn]) -> dict[str, Any]:
        other = self.turns.read_other(row, pref.rejected, messages)
        shared = 0
        while (
            shared < len(other)
            and shared < len(messages)
            and other[shared]["role"] == messages[shared]["role"]
            and other[shared]["content"] == messages[shared]["content"]
        ):
            shared += 1
        rejected = [{**m, "train": False} for m in other[shared:]]
        if not rejected or not any(m["role"] == "assistant" for m in rejected):
            raise RowError(pref.rejected, "preference pair without a rejected answer")
        out: dict[str, Any] = {"rejected": rejected}
        for key, path in (("chosen_score", pref.chosen_score), ("rejected_score", pref.rejected_score)):
            value = get_path(row, path) if path else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = float(value)
        return out

    def _label(self, name: str, row: dict[str, Any], messages: list[Turn]) -> bool:
        value = get_path(row, name)
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            value = value.lower() in ("true", "1")
        if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            value = bool(value)
        if not isinstance(value, bool):
            raise RowError(name, f"label must be true/false, got {type_name(value)}")
        if not value:
            for m in messages:
                if m["role"] == "assistant":
                    m["train"] = False  # an undesirable answer is kept for the record, never trained
        return value

    # -- the end of the record -----------------------------------------------------------------
    def _finish(self, messages: list[Turn]) -> list[Turn]:
        spec = self.spec
        field = (
            spec.messages_path
            or (spec.columns.prompt[0] if spec.columns else None)
            or (spec.transcript.field if spec.transcript else "<row>")
        )
        if self.native:
            for m in messages:
                if m["role"] == "assistant" and m.get("train") is None:
                    m["train"] = True  # native multi-turn data: every assistant turn is a training target
            last = len(messages) - 1
            while last >= 0 and not (messages[last]["role"] == "assistant" and messages[last].get("train")):
                last -= 1
            if last < 0:
                why = (
                    "undesirable answer (label false): kept out of training"
                    if spec.label_field
                    else "native record has no trainable assistant turn"
                )
                raise RowError(field, why)
            return messages[: last + 1]  # a native row ends on a trainable assistant turn
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if not users:
            raise RowError(field, "no user turn: nothing to regenerate from")
        cut = users[0] if spec.cut == "first_user" else users[-1]
        return messages[: cut + 1]


_MAPPERS: dict[int, tuple[AdapterSpec, RowMapper]] = {}


def mapper_for(spec: AdapterSpec) -> RowMapper:
    """The compiled mapper for this spec object (specs are not mutated once they are applied)."""
    hit = _MAPPERS.get(id(spec))
    if hit is None or hit[0] is not spec:
        if len(_MAPPERS) > 64:
            _MAPPERS.clear()
        hit = _MAPPERS[id(spec)] = (spec, RowMapper(spec))
    return hit[1]


def apply_row(spec: AdapterSpec, row_index: int, row: Any) -> list[Conversation]:
    """Canonical records for one raw row; raises RowError(field, reason) for a bad row."""
    return mapper_for(spec).apply(row_index, row)


def role_labels(spec: AdapterSpec, row: Any) -> list[str]:
    """Raw role labels of one row's turns (for vocabularies and the 'every label mapped' check)."""
    if spec.layout not in ("messages", "trajectory") or not isinstance(row, dict):
        return []
    turns = get_path(row, spec.messages_path)
    if isinstance(turns, str) and spec.messages_path in spec.json_fields:
        try:
            turns = limits.loads_limited(turns)
        except limits.LimitExceeded:
            return []
    if not isinstance(turns, list):
        return []
    key = spec.role_key
    out = []
    for t in turns:
        label = get_path(t, key) if isinstance(t, dict) else None
        if isinstance(label, str):
            out.append(label)
    return out


__all__ = [
    "RowError",
    "RowMapper",
    "apply_row",
    "as_tool_calls",
    "decode_json_field",
    "get_path",
    "message",
    "role_labels",
    "split_transcript",
    "type_name",
]


def _results_from_text(tags: list[str], messages: list[Turn]) -> None:
    """User turns that are wholly a result element right after a call (or after another result) are tool
    results: the dataset wrote the environment's reply under the user's name."""
    for i in range(1, len(messages)):
        m, prev = messages[i], messages[i - 1]
        after_call = (prev["role"] == "assistant" and prev.get("tool_calls")) or prev["role"] == "tool"
        if m["role"] == "user" and after_call and result_tag(m.get("content") or "", tags):
            m["role"] = "tool"
