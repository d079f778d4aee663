"""Apply an AdapterSpec to one raw row: the only place raw rows become canonical Conversations.

The spec is compiled once into a `RowMapper` (field lookups, role map, flags resolved up front) so the
per-row work is a handful of dict reads; `apply_row` caches the mapper per spec object. Turns are
built as plain dicts and the record is validated once at the end (one pydantic-core call is faster
than constructing each Message, and keeps the strict model as the last word on every record). A bad row
raises `RowError(field, reason)` naming the exact field (e.g. `conversations[3].from`), never returns
a half-mapped record and never drops a turn the spec did not explicitly drop.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from adapters.records import Conversation, record_id
from adapters.spec import AdapterSpec
from catalog import limits


class RowError(ValueError):
    """One raw row cannot become a record. `field` names where, `reason` says what is wrong."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def get_path(row: dict[str, Any], path: str) -> Any:
    """Read a dotted path (`a.b.c`); a missing step gives None."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def decode_json_field(value: Any, field: str) -> Any:
    """A JSON-string column becomes its value; non-strings pass through; bad JSON is a RowError."""
    if not isinstance(value, str):
        return value
    try:  # under the depth/int limits: a deeply nested JSON string is a row error, not a RecursionError
        return limits.loads_limited(value, "value")
    except limits.LimitExceeded as exc:
        detail = str(exc).removeprefix("value: ")
        raise RowError(field, f"not valid JSON ({detail})" if exc.reason == "invalid_json" else detail) from None


Turn = dict[str, Any]  # a Message as a plain dict until the record is validated


def _message(role: str, content: str, reasoning: str | None = None, tool_calls: list | None = None,
             train: bool | None = None) -> Turn:
    return {"role": role, "content": content, "reasoning": reasoning, "tool_calls": tool_calls, "train": train}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class RowMapper:
    """A spec compiled for fast application to many rows."""

    def __init__(self, spec: AdapterSpec):
        self.spec = spec
        src = spec.source
        self.source_key = (src.repo_id, src.revision, src.config, src.split)
        self.json_fields = tuple(spec.json_fields)
        self.native = spec.mode == "native"
        self.limit = spec.max_content_chars
        self.role_map = dict(spec.role_map)
        self.null_policy = dict(spec.null_policy)
        reasoning = spec.reasoning
        self.reasoning_key = reasoning.key if reasoning else None
        self.delimiters = tuple(reasoning.delimiters) if reasoning else ()
        self.unwrap = tuple(reasoning.unwrap) if reasoning else ()

    # -- public ------------------------------------------------------------------------------
    def apply(self, row_index: int, row: Any) -> list[Conversation]:
        if not isinstance(row, dict):
            raise RowError("<row>", f"expected an object, got {_type_name(row)}")
        if self.json_fields:
            row = dict(row)
            for name in self.json_fields:
                row[name] = decode_json_field(row.get(name), name)
        spec = self.spec
        messages: list[Turn] = []
        if spec.system_field:
            system = row.get(spec.system_field)
            if system is not None and not isinstance(system, str):
                raise RowError(spec.system_field, f"system prompt must be a string, got {_type_name(system)}")
            if system and system.strip():
                messages.append(_message("system", system))
        if spec.layout == "columns":
            messages += self._column_turns(row)
        else:
            turns = self._turns(row)
            if messages and turns and turns[0]["role"] == "system":
                messages = []  # the turn list carries its own system prompt: it wins over the column
            messages += turns
        messages = self._finish(messages)
        repo, revision, config, split = self.source_key
        try:
            return [Conversation.model_validate({
                "id": record_id(repo, config, split, row_index),
                "source": {"repo_id": repo, "revision": revision, "config": config, "split": split,
                           "row_index": row_index},
                "category": spec.category, "mode": spec.mode, "messages": messages})]
        except ValidationError as exc:  # a value the checks above missed: still one row's error, never a crash
            first = exc.errors()[0]
            raise RowError(".".join(map(str, first["loc"])) or "<record>", first["msg"]) from None

    # -- turn lists --------------------------------------------------------------------------
    def _turns(self, row: dict[str, Any]) -> list[Turn]:
        spec = self.spec
        path = spec.messages_path
        turns = get_path(row, path)
        if not isinstance(turns, list):
            raise RowError(path, f"expected a list of turns, got {_type_name(turns)}")
        role_key, content_key, flag_key, calls_key = (spec.role_key, spec.content_key, spec.train_flag_key,
                                                      spec.tool_calls_key)
        out: list[Turn] = []
        for i, turn in enumerate(turns):
            if not isinstance(turn, dict):
                raise RowError(f"{path}[{i}]", f"expected a turn object, got {_type_name(turn)}")
            label = turn.get(role_key)
            role = self.role_map.get(label) if isinstance(label, str) else None
            if role is None:
                what = f"unmapped role label {label!r}" if isinstance(label, str) else \
                    f"role label is {_type_name(label)}, expected a string"
                raise RowError(f"{path}[{i}].{role_key}", what)
            if role == "drop":
                continue
            field, content = content_key, turn.get(content_key)
            if content is None and role in self.null_policy:
                field = self.null_policy[role]
                content = turn.get(field)
            calls = self._tool_calls(turn.get(calls_key), f"{path}[{i}].{calls_key}") if calls_key else None
            content = self._text(content, f"{path}[{i}].{field}", allow_empty=bool(calls), limit=self.limit)
            reasoning = None
            if role == "assistant":
                reasoning, content = self._split_reasoning(turn, content, f"{path}[{i}]")
            train = turn.get(flag_key) if flag_key else None
            if train is not None and not isinstance(train, bool):
                raise RowError(f"{path}[{i}].{flag_key}", f"training flag must be a boolean, got {_type_name(train)}")
            out.append(_message(role, content, reasoning, calls, train))
        return out

    def _tool_calls(self, value: Any, field: str) -> list[dict[str, Any]] | None:
        value = decode_json_field(value, field)
        if value is None or value == []:
            return None
        if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
            raise RowError(field, f"tool calls must be a list of objects, got {_type_name(value)}")
        # `function.arguments` stays a JSON string: that is the OpenAI wire format templates expect.
        return value

    # -- columns -----------------------------------------------------------------------------
    def _column_turns(self, row: dict[str, Any]) -> list[Turn]:
        cols = self.spec.columns
        first, *extra = cols.prompt
        if first not in row:
            raise RowError(first, "prompt column is missing")
        parts = [self._text(row.get(first), first, limit=self.limit)]
        for name in extra:
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                raise RowError(name, f"expected a string, got {_type_name(value)}")
            if value and value.strip():
                parts.append(value)
        turns = [_message("user", "\n\n".join(parts))]
        if cols.response is None or not self.native:
            return turns  # regenerate mode: the target writes the answer, the original is not needed
        value = row.get(cols.response)
        if cols.response_is_tool_calls:
            calls = self._tool_calls(value, cols.response)
            if not calls:
                raise RowError(cols.response, "no tool calls in the response column")
            turns.append(_message("assistant", "", tool_calls=calls))
        else:
            content = self._text(value, cols.response, limit=self.limit)
            reasoning, content = self._split_reasoning({}, content, cols.response)
            turns.append(_message("assistant", content, reasoning))
        return turns

    # -- shared ------------------------------------------------------------------------------
    @staticmethod
    def _text(value: Any, field: str, allow_empty: bool = False, limit: int | None = None) -> str:
        if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
            if not all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in value):
                raise RowError(field, "content parts must all be objects with a string `text`")
            value = "".join(p["text"] for p in value)
        if value is None:
            if allow_empty:
                return ""
            raise RowError(field, "content is null")
        if not isinstance(value, str):
            raise RowError(field, f"content must be a string, got {_type_name(value)}")
        if not allow_empty and not value.strip():
            raise RowError(field, "content is empty")
        if limit is not None and len(value) > limit:
            raise RowError(field, f"content is huge ({len(value):,} chars, limit {limit:,})")
        return value

    def _split_reasoning(self, turn: dict[str, Any], content: str, where: str) -> tuple[str | None, str]:
        reasoning = None
        if self.reasoning_key:
            value = turn.get(self.reasoning_key)
            if value is not None and not isinstance(value, str):
                raise RowError(f"{where}.{self.reasoning_key}", f"reasoning must be a string, got {_type_name(value)}")
            reasoning = value or None
        for open_, close in self.delimiters:
            start = content.find(open_)
            if start != -1 and not content[:start].strip():
                end = content.find(close, start)
                if end == -1:
                    raise RowError(where, f"reasoning opened with {open_!r} but never closed with {close!r}")
                reasoning = content[start + len(open_):end].strip()
                content = content[end + len(close):].strip()
                break
        for open_, close in self.unwrap:
            if content.startswith(open_) and content.endswith(close):
                content = content[len(open_):len(content) - len(close)].strip()
        return reasoning, content

    def _finish(self, messages: list[Turn]) -> list[Turn]:
        field = self.spec.messages_path or self.spec.columns.prompt[0]
        if self.native:
            trainable = False
            for m in messages:
                if m["role"] == "assistant" and m["train"] is None:
                    m["train"] = True  # native multi-turn data: every assistant turn is a training target
                trainable = trainable or (m["role"] == "assistant" and m["train"] is True)
            if not trainable:
                raise RowError(field, "native record has no trainable assistant turn")
            return messages
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if not users:
            raise RowError(field, "no user turn: nothing to regenerate from")
        cut = users[0] if self.spec.cut == "first_user" else users[-1]
        return messages[:cut + 1]


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
    if spec.layout == "columns" or not isinstance(row, dict):
        return []
    turns = get_path(row, spec.messages_path)
    if isinstance(turns, str) and spec.messages_path in spec.json_fields:
        try:
            turns = limits.loads_limited(turns)
        except limits.LimitExceeded:
            return []
    if not isinstance(turns, list):
        return []
    return [t[spec.role_key] for t in turns if isinstance(t, dict) and isinstance(t.get(spec.role_key), str)]
