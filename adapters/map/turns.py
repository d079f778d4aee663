"""Reading the turns of one raw row: TurnReader dispatches on the spec's layout and reads turn lists (nested
paths, parallel arrays, content blocks) itself; the layouts without speaker labels live in spoken_turns.py
(utterances, exchanges, transcripts) and the column layouts in column_turns.py, read through the same reader so
content, reasoning and errors follow one set of rules.

Kept apart from apply.py so the preference reader can read the rejected side with the same rules as
the chosen one. Content may be a string or a list of content parts (text parts are joined, media parts
become `parts`). Errors are raised as the caller's RowError type (passed in, no import cycle).
"""

from __future__ import annotations

from typing import Any

from adapters.map import column_turns, rendered, spoken_turns
from adapters.map.structure import zipped
from adapters.read import media as media_mod
from adapters.records import normalize_call
from adapters.row_fields import as_tool_calls, get_path, type_name
from adapters.spec import AdapterSpec

BLOCK_TYPES = ("tool_use", "tool_result", "thinking")
END_TOKENS = rendered.END_TOKENS  # the grammars' own, declared once (adapters/map/rendered.py)


def split_transcript(text: str, markers: dict[str, str]) -> list[tuple[str, str]]:
    """(role, text) segments of a line-start-marker transcript (end-of-turn tokens stripped, preamble left out)."""
    return [(role, body) for role, body in rendered.split(text, markers, True, END_TOKENS) if role]


class TurnReader:
    def __init__(self, spec: AdapterSpec, error: type):
        self.spec = spec
        self.error = error
        self.role_map = dict(spec.role_map)
        self.null_policy = dict(spec.null_policy)
        self.inverted = bool(spec.train_flag_inverted)  # the flag marks what is *not* trained
        self.limit = spec.max_content_chars
        reasoning = spec.reasoning
        self.reasoning_key = reasoning.key if reasoning else None
        self.delimiters = tuple(reasoning.delimiters) if reasoning else ()
        self.unwrap = tuple(reasoning.unwrap) if reasoning else ()
        self.native = spec.mode == "native"
        # Nested keys (`payload.text`) are read by path; flat ones by a plain dict lookup (the common case).
        self.nested = any("." in (k or "") for k in (spec.role_key, spec.content_key))
        reasoning_on = bool(self.reasoning_key or self.delimiters or self.unwrap)
        self.plain = not (
            self.nested
            or spec.tool_calls_key
            or spec.parts_key
            or reasoning_on
            or set(self.role_map.values()) - {"system", "user", "assistant"}
        )

    def get(self, turn: dict[str, Any], key: str | None) -> Any:
        if key is None:
            return None
        return get_path(turn, key) if self.nested and "." in key else turn.get(key)

    # -- dispatch ------------------------------------------------------------------------------
    def read(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        layout, path = self.spec.layout, self.spec.messages_path or ""  # the spec validator requires the path
        if layout == "columns":
            return column_turns.columns(self, row)
        if layout == "utterances":
            return spoken_turns.utterances(self, get_path(row, path), path)
        if layout == "transcript":
            field = self.spec.transcript.field if self.spec.transcript else ""
            return spoken_turns.transcript(self, get_path(row, field), field)
        if layout == "turn_columns":
            return column_turns.turn_columns(self, row)
        value = get_path(row, path)
        if self.spec.zip_paths:  # parallel arrays, zipped into turn objects by `_turn_list`
            value = {p.rsplit(".", 1)[-1]: get_path(row, p) for p in self.spec.zip_paths}
        turns = self._turn_list(value, path)
        if self.spec.completion_path:  # TRL prompt-completion, LLaMA-Factory ranking: the answer lives apart
            turns += self._answer(get_path(row, self.spec.completion_path), self.spec.completion_path)
        return turns

    def assistant(self, text: str, where: str) -> dict[str, Any]:
        """One assistant turn from an answer's text (reasoning split off as for any assistant turn)."""
        return self.turn("assistant", text, None, None, None, where)

    def read_list(self, value: Any, path: str) -> list[dict[str, Any]]:
        """A turn list at another path, read with this spec's keys and role map (the other side of a battle)."""
        return self._turn_list(value, path)

    def _answer(self, value: Any, path: str) -> list[dict[str, Any]]:
        """The answer column of a turn-list prompt: a turn list, one turn object, or the answer's text."""
        if isinstance(value, dict):
            return self._turn_list([value], path)
        if isinstance(value, str):
            return [self.turn("assistant", self.text(value, path), None, None, None, path)]
        return self._turn_list(value, path)

    def read_other(
        self, row: dict[str, Any], path: str, chosen: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """The rejected side of a preference pair, read like the chosen side."""
        value = get_path(row, path)
        if isinstance(value, dict) and self.spec.completion_path:  # one rejected turn object after the prompt
            prompt = chosen or []
            cut = max((i for i, m in enumerate(prompt) if m["role"] == "user"), default=-1)
            return [*prompt[: cut + 1], *self._turn_list([value], path)]
        if isinstance(value, list):
            if self.spec.layout == "utterances":
                return spoken_turns.utterances(self, value, path)
            return self._turn_list(value, path)
        if isinstance(value, str) and self.spec.layout == "transcript":
            return spoken_turns.transcript(self, value, path)
        text = self.text(value, path)
        prompt = chosen or []
        cut = max((i for i, m in enumerate(prompt) if m["role"] == "user"), default=-1)
        return [*prompt[: cut + 1], self.turn("assistant", text, None, None, None, path)]

    # -- pieces --------------------------------------------------------------------------------
    def turn(
        self,
        role: str,
        content: str,
        calls: list | None,
        train: bool | None,
        parts: list | None,
        where: str,
        **extra: Any,
    ) -> dict[str, Any]:
        reasoning = None
        if role == "assistant":
            reasoning, content = self.split_reasoning(extra.pop("source_turn", {}), content, where)
        extra.pop("source_turn", None)
        turn = {"role": role, "content": content, "reasoning": reasoning, "tool_calls": calls, "train": train}
        if parts:
            turn["parts"] = parts
        turn.update({k: v for k, v in extra.items() if v is not None})
        return turn

    def _plain_list(self, turns: list[Any]) -> list[dict[str, Any]] | None:
        """The fastest reading, for specs with flat keys, chat roles only and no per-turn extras: plain string
        content for every turn, or None (then the general reader handles the row, errors included)."""
        role_map, role_key, content_key, limit = self.role_map, self.spec.role_key, self.spec.content_key, self.limit
        null_policy, flag_key = self.null_policy, self.spec.train_flag_key
        out = []
        for turn in turns:
            if turn.__class__ is not dict:
                return None
            label = turn.get(role_key)
            if label.__class__ is not str:
                return None
            role = role_map.get(label)
            content = turn.get(content_key)
            if content is None and role in null_policy:
                content = turn.get(null_policy[role])
            if role is None or content.__class__ is not str or not content or len(content) > limit or content.isspace():
                return None
            train = turn.get(flag_key) if flag_key else None
            if train is not None and train.__class__ is not bool:
                return None
            if train is not None and self.inverted:
                train = not train  # a mask of the turns left out of the loss
            # only the keys that carry a value: fewer keys for the validator to walk on every record
            out.append(
                {"role": role, "content": content}
                if train is None
                else {"role": role, "content": content, "train": train}
            )
        return out

    def _turn_list(self, turns: Any, path: str) -> list[dict[str, Any]]:

        if self.plain and turns.__class__ is list:
            fast = self._plain_list(turns)
            if fast is not None:
                return fast

        spec = self.spec
        turns = zipped(turns)  # a struct of arrays (speaker list beside text list) is a list of turns
        if not isinstance(turns, list):
            raise self.error(path, f"expected a list of turns, got {type_name(turns)}")
        role_key, content_key, flag_key, calls_key = (
            spec.role_key,
            spec.content_key,
            spec.train_flag_key,
            spec.tool_calls_key,
        )
        # The hot loop: plain dict reads for the common case (flat keys, string content); everything else
        # (nested keys, content parts, calls, nulls, errors) takes the general path below.
        role_map, null_policy, limit, nested = self.role_map, self.null_policy, self.limit, self.nested
        reasoning_on = bool(self.reasoning_key or self.delimiters or self.unwrap)
        parts_key = spec.parts_key
        out: list[dict[str, Any]] = []
        for i, turn in enumerate(turns):
            if turn.__class__ is not dict:
                raise self.error(f"{path}[{i}]", f"expected a turn object, got {type_name(turn)}")
            label = self.get(turn, role_key) if nested else turn.get(role_key)
            role = role_map.get(label) if label.__class__ is str else None
            if role is None:
                what = (
                    f"unmapped role label {label!r}"
                    if isinstance(label, str)
                    else f"role label is {type_name(label)}, expected a string"
                )
                raise self.error(f"{path}[{i}].{role_key}", what)
            if role == "drop":
                continue
            field, content = content_key, (self.get(turn, content_key) if nested else turn.get(content_key))
            if content is None and role in null_policy:
                field = null_policy[role]
                content = turn.get(field)
            calls = None
            if calls_key:
                value = turn.get(calls_key)
                if value:
                    calls = as_tool_calls(value, f"{path}[{i}].{calls_key}")
            parts = None
            if content.__class__ is list and any(isinstance(b, dict) and b.get("type") in BLOCK_TYPES for b in content):
                flag = turn.get(flag_key) if flag_key else None
                flag = not flag if self.inverted and isinstance(flag, bool) else flag
                out += self._blocks(role, content, f"{path}[{i}].{field}", flag)
                continue
            if role == "tool_call":  # the turn's text is the call itself (LLaMA-Factory function_call)
                calls = as_tool_calls(content, f"{path}[{i}].{field}")
                if not calls:
                    raise self.error(f"{path}[{i}].{field}", "function_call turn holds no call")
                role, content = "assistant", ""
            elif not (
                content.__class__ is str and len(content) <= limit and (calls or (content and not content.isspace()))
            ):
                content, parts = self.content(content, f"{path}[{i}].{field}", allow_empty=bool(calls))
            if parts_key and turn.get(parts_key):
                parts = (parts or []) + media_mod.parts_of(turn[parts_key], f"{path}[{i}].{parts_key}")
            train = turn.get(flag_key) if flag_key else None
            if train is not None and train.__class__ is not bool:
                if type(train) is int and train in (0, 1):  # OpenAI fine-tuning `weight`: 0 or 1
                    train = bool(train)
                else:
                    raise self.error(
                        f"{path}[{i}].{flag_key}", f"training flag must be a boolean, got {type_name(train)}"
                    )
            if train is not None and self.inverted:
                train = not train
            if role == "assistant" and calls and out and out[-1]["role"] == "assistant" and not out[-1]["tool_calls"]:
                # a `function_call` turn right after the assistant's own text: one assistant step
                out[-1]["tool_calls"] = calls
                if train is False:
                    out[-1]["train"] = False
                continue
            reasoning = None
            if role == "assistant" and reasoning_on:
                reasoning, content = self.split_reasoning(turn, content, f"{path}[{i}]")
            m = {"role": role, "content": content, "reasoning": reasoning, "tool_calls": calls, "train": train}
            if parts:
                m["parts"] = parts
            if role == "tool":
                for key, name in ((spec.tool_call_id_key, "tool_call_id"), (spec.tool_name_key, "name")):
                    value = turn.get(key) if key else None
                    if value is not None and not isinstance(value, str):
                        raise self.error(f"{path}[{i}].{key}", f"must be a string, got {type_name(value)}")
                    if value:
                        m[name] = value
            out.append(m)
        return out

    def _blocks(self, role: str, blocks: list[Any], where: str, train: Any) -> list[dict[str, Any]]:
        """Anthropic-style content blocks: text, thinking, tool_use (→ calls) and tool_result (→ tool turns)."""
        texts, thinking, calls, results = [], [], [], []
        for j, b in enumerate(blocks):
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif kind == "thinking" and isinstance(b.get("thinking"), str):
                thinking.append(b["thinking"])
            elif kind == "tool_use":
                try:
                    calls.append(
                        normalize_call(
                            {"id": b.get("id"), "name": b.get("name"), "arguments": b.get("input", {})}, f"call_{j}"
                        )
                    )
                except ValueError as exc:
                    raise self.error(f"{where}[{j}]", str(exc)) from None
            elif kind == "tool_result":
                body = b.get("content")
                if isinstance(body, list):
                    body = "".join(x.get("text", "") for x in body if isinstance(x, dict))
                results.append(
                    {
                        "role": "tool",
                        "content": self.text(body, f"{where}[{j}].content", allow_empty=True),
                        "reasoning": None,
                        "tool_calls": None,
                        "train": None,
                        **({"tool_call_id": b["tool_use_id"]} if isinstance(b.get("tool_use_id"), str) else {}),
                    }
                )
            else:
                raise self.error(
                    f"{where}[{j}]", f"content block of type {kind!r} is not text, thinking, tool_use or tool_result"
                )
        out = list(results)
        text = "".join(texts)
        if text.strip() or calls or (role != "tool" and not results):
            if role != "assistant" and calls:
                raise self.error(where, f"tool_use blocks in a {role} turn")
            out.append(
                {
                    "role": role,
                    "content": self.text(text, where, allow_empty=bool(calls)),
                    "reasoning": "\n".join(thinking) or None,
                    "tool_calls": calls or None,
                    "train": train if isinstance(train, bool) else None,
                }
            )
        return out

    # -- text ------------------------------------------------------------------------------------
    def content(self, value: Any, field: str, allow_empty: bool = False) -> tuple[str, list | None]:
        """(text, media parts) of a content value: a string or a list of content parts."""
        parts = None
        if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, {"type": "image"...}]
            texts, parts = [], []
            for j, p in enumerate(value):
                if isinstance(p, dict) and isinstance(p.get("text"), str):
                    texts.append(p["text"])
                elif isinstance(p, str):
                    texts.append(p)
                else:
                    found = media_mod.parts_of(p, f"{field}[{j}]")
                    if not found:
                        raise self.error(field, "content parts must be text or media objects")
                    parts += found
            value = "".join(texts)
            allow_empty = allow_empty or bool(parts)
        return self.text(value, field, allow_empty), parts or None

    def text(self, value: Any, field: str, allow_empty: bool = False) -> str:
        if value is None:
            if allow_empty:
                return ""
            raise self.error(field, "content is null")
        if not isinstance(value, str):
            raise self.error(field, f"content must be a string, got {type_name(value)}")
        if not allow_empty and not value.strip():
            raise self.error(field, "content is empty")
        if len(value) > self.limit:
            raise self.error(field, f"content is huge ({len(value):,} chars, limit {self.limit:,})")
        return value

    def split_reasoning(self, turn: dict[str, Any], content: str, where: str) -> tuple[str | None, str]:
        reasoning = None
        if self.reasoning_key:
            value = turn.get(self.reasoning_key)
            if value is not None and not isinstance(value, str):
                raise self.error(f"{where}.{self.reasoning_key}", f"reasoning must be a string, got {type_name(value)}")
            reasoning = value or None
        for open_, close in self.delimiters:
            start = content.find(open_)
            if start != -1 and not content[:start].strip():
                end = content.find(close, start)
                if end == -1:
                    raise self.error(where, f"reasoning opened with {open_!r} but never closed with {close!r}")
                reasoning = content[start + len(open_) : end].strip()
                content = content[end + len(close) :].strip()
                break
        for open_, close in self.unwrap:
            if content.startswith(open_) and content.endswith(close):
                content = content[len(open_) : len(content) - len(close)].strip()
        return reasoning, content
