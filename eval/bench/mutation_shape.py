"""Where the text lives in a schema family's raw rows, read from its right spec, and the two edits every
corruption is built from: set one dotted path, edit the first exchange whatever the layout.

Its own module so that the mutation bench (eval/bench/mutation_kill.py) and its text corruptions
(eval/bench/mutation_text.py) both stand on it instead of on each other.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adapters.row_fields import get_path
from adapters.spec import AdapterSpec

Row = dict[str, Any]


# -- where the text lives in a family's raw rows (read from its right spec) ----------------------
@dataclass
class Shape:
    spec: AdapterSpec

    @property
    def turn_list(self) -> bool:
        return self.spec.layout in ("messages", "trajectory") and bool(self.spec.role_key and self.spec.content_key)

    def labels(self, role: str) -> set[str]:
        return {label for label, r in self.spec.role_map.items() if r == role}

    def _paths(self) -> list[str]:
        return [p for p in (self.spec.messages_path, self.spec.completion_path) if p]

    def turns(self, row: Row) -> list[Row] | None:
        """The row's turns, prompt and completion lists concatenated (TRL prompt-completion)."""
        out: list[Row] = []
        for path in self._paths():
            value = get_path(row, path)
            if isinstance(value, str) and path in self.spec.json_fields:
                value = json.loads(value)
            if not isinstance(value, list):
                return None
            out += copy.deepcopy(value)
        return out

    def with_turns(self, row: Row, turns: list[Row]) -> Row:
        """Write turns back: the prompt list keeps its length, the completion list takes the rest."""
        paths = self._paths()
        sizes = [
            len(get_path(row, p) if not isinstance(get_path(row, p), str) else json.loads(get_path(row, p)))
            for p in paths
        ]
        if len(paths) == 1:
            sizes = [len(turns)]
        else:
            sizes = [min(sizes[0], len(turns)), max(0, len(turns) - min(sizes[0], len(turns)))]
        start = 0
        for path, size in zip(paths, sizes):
            encoded = isinstance(get_path(row, path), str)
            part = turns[start : start + size]
            row = _set(row, path, json.dumps(part, ensure_ascii=False) if encoded else part)
            start += size
        return row

    def first_exchange(self, turns: list[Row]) -> tuple[int, int] | None:
        """Indices of the first user turn and the assistant turn right after it (string contents only)."""
        role_key, content_key = self.spec.role_key or "", self.spec.content_key or ""
        users, assistants = self.labels("user"), self.labels("assistant")
        for i, t in enumerate(turns[:-1]):
            nxt = turns[i + 1]
            if (
                isinstance(t, dict)
                and isinstance(nxt, dict)
                and get_path(t, role_key) in users
                and get_path(nxt, role_key) in assistants
                and isinstance(get_path(t, content_key), str)
                and isinstance(get_path(nxt, content_key), str)
            ):
                return i, i + 1
        return None

    def exchange(self, row: Row) -> tuple[list[Row], tuple[int, int]] | None:
        """The row's turns (a copy) and its first user/assistant exchange, or None (no turn list, no exchange)."""
        turns = self.turns(row) if self.turn_list else None
        ex = self.first_exchange(turns) if turns else None
        return None if turns is None or ex is None else (turns, ex)

    @property
    def prompt_only(self) -> bool:
        """A set of prompts alone: one prompt column and no answer (adapters/infer/request_column.py)."""
        cols = self.spec.columns
        return bool(cols and cols.response is None and not self.spec.candidates and "." not in cols.prompt[0])

    def prompt_column(self) -> str | None:
        return self.spec.columns.prompt[0] if self.prompt_only and self.spec.columns else None

    def columns(self) -> tuple[str, str] | None:
        cols = self.spec.columns
        return (cols.prompt[0], cols.response) if cols and cols.response and "." not in cols.prompt[0] else None


def _set(row: Row, path: str, value: Any) -> Row:
    """A copy of `row` with the dotted `path` set."""
    head, _, rest = path.partition(".")
    out = dict(row)
    out[head] = _set(out.get(head) or {}, rest, value) if rest else value
    return out


def _edit_exchange(shape: Shape, row: Row, edit: Callable[[str, str], tuple[str, str]]) -> Row | None:
    """Apply edit(prompt, answer) → (prompt, answer) to the row's first exchange, whatever the layout."""
    prompt = shape.prompt_column()
    if prompt:  # prompts alone: an edit of the prompt applies, one that only changes an answer (there is none) does not
        p = row.get(prompt)
        new_p = edit(p, "")[0] if isinstance(p, str) else p
        return {**row, prompt: new_p} if isinstance(new_p, str) and new_p.strip() and new_p != p else None
    cols = shape.columns()
    if cols:
        p, a = row.get(cols[0]), row.get(cols[1])
        if not (isinstance(p, str) and isinstance(a, str)):
            return None
        new_p, new_a = edit(p, a)
        return {**row, cols[0]: new_p, cols[1]: new_a}
    found = shape.exchange(row)
    if found is None:
        return None
    turns, (u, a) = found
    key = shape.spec.content_key or ""
    new_p, new_a = edit(get_path(turns[u], key), get_path(turns[a], key))
    turns[u], turns[a] = _set(turns[u], key, new_p), _set(turns[a], key, new_a)
    return shape.with_turns(row, turns)
