"""Corruptions that change what the text says, on a fraction of rows (issue 33): the kinds a second mutation pass
over held-out shapes found passing silently. eval/bench/mutation_kill.py applies each to every third row
(`PARTIAL`), so a check that needs every row to look wrong cannot catch them.

    echo_prompt       the answer opens by repeating the prompt
    wrap_some         a third of the answers wrapped in <answer> tags
    cut_answer        answers cut mid-sentence (a length-capped export)
    html_escape       answers HTML-escaped as a web export writes them (&lt;p&gt;...)
    language_swap     answers replaced by text in another script than the prompt's
    system_into_user  the system turn removed and its text pasted in front of the first user turn
    drop_result       the tool result after a call deleted
    (on every row)
    move_answer_half  the second half of the answer moved to a new column
    swap_column_names the prompt and answer columns' names exchanged
(An extra context column is not here: its right mapping joins the passage into the prompt, which the bench's
unmutated truth cannot express, so every right answer would read as a survivor.)
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable
from typing import Any

from adapters.row_fields import get_path
from eval.bench.mutation_shape import _edit_exchange, _set

Row = dict[str, Any]
OTHER_SCRIPT = [
    "首先用最小的输入复现这个问题，然后逐步缩小范围，直到找到真正的原因。",
    "Сначала воспроизведите ошибку на самом маленьком входе, затем ищите причину шаг за шагом.",
    "가장 작은 입력으로 문제를 재현한 다음 원인을 단계별로 좁혀 가세요.",
]


def _edit(shape: Any, row: Row, edit: Callable[[str, str], tuple[str, str]]) -> Row | None:

    return _edit_exchange(shape, row, edit)


def echo_prompt(shape: Any, row: Row, rng: random.Random) -> Row | None:
    return _edit(shape, row, lambda p, a: (p, f"{p}\n\n{a}"))


def wrap_some(shape: Any, row: Row, rng: random.Random) -> Row | None:
    return _edit(shape, row, lambda p, a: (p, f"<answer>{a}</answer>"))


def cut_answer(shape: Any, row: Row, rng: random.Random) -> Row | None:
    def edit(p: str, a: str) -> tuple[str, str]:
        words = a.split()
        if len(words) < 12:
            return p, a
        cut = words[: max(8, int(len(words) * 0.6))]
        while cut and not cut[-1].strip(".,;:!?").isalpha():
            cut.pop()
        return p, " ".join(cut).rstrip(".,;:!?")

    out = _edit(shape, row, edit)
    return out if out != row else None


def html_escape(shape: Any, row: Row, rng: random.Random) -> Row | None:
    def edit(p: str, a: str) -> tuple[str, str]:
        paragraphs = "".join(f"<p>{s.strip()}</p>" for s in a.split("\n") if s.strip())
        return p, html.escape(paragraphs)

    return _edit(shape, row, edit)


def language_swap(shape: Any, row: Row, rng: random.Random) -> Row | None:
    return _edit(shape, row, lambda p, a: (p, rng.choice(OTHER_SCRIPT)))


def system_into_user(shape: Any, row: Row, rng: random.Random) -> Row | None:
    if not shape.turn_list:
        return None
    turns, role_key, key = shape.turns(row), shape.spec.role_key or "", shape.spec.content_key or ""
    if not turns or not isinstance(turns[0], dict) or get_path(turns[0], role_key) not in shape.labels("system"):
        return None
    system = get_path(turns[0], key)
    users = [i for i, t in enumerate(turns) if isinstance(t, dict) and get_path(t, role_key) in shape.labels("user")]
    if not isinstance(system, str) or not system.strip() or not users:
        return None

    u = users[0]
    turns[u] = _set(turns[u], key, f"{system}\n\n{get_path(turns[u], key)}")
    return shape.with_turns(row, turns[1:])


def drop_result(shape: Any, row: Row, rng: random.Random) -> Row | None:
    if not shape.turn_list:
        return None
    turns, role_key = shape.turns(row), shape.spec.role_key or ""
    if turns is None:
        return None
    tools = shape.labels("tool")
    for i, t in enumerate(turns):
        if isinstance(t, dict) and get_path(t, role_key) in tools and i + 1 < len(turns):
            del turns[i]
            return shape.with_turns(row, turns)
    return None


def move_answer_half(shape: Any, row: Row, rng: random.Random) -> Row | None:
    """The second half of the answer moved into a new column `answer_cont` (an answer split over two fields)."""
    moved: list[str] = []

    def edit(p: str, a: str) -> tuple[str, str]:
        words = a.split(" ")
        moved.append(" ".join(words[len(words) // 2 :]))
        return p, " ".join(words[: len(words) // 2])

    out = _edit(shape, row, edit)
    return None if out is None or len(moved[0].split()) < 3 else {**out, "answer_cont": moved[0]}


def swap_column_names(shape: Any, row: Row, rng: random.Random) -> Row | None:
    """The prompt and answer columns' names exchanged (each text under the other's name)."""
    cols = shape.columns()
    if not cols or cols[0] not in row or cols[1] not in row:
        return None
    return {**row, cols[0]: row[cols[1]], cols[1]: row[cols[0]]}


TEXT_CORRUPTIONS: dict[str, Callable[[Any, Row, random.Random], Row | None]] = {
    "echo_prompt": echo_prompt,
    "wrap_some": wrap_some,
    "cut_answer": cut_answer,
    "html_escape": html_escape,
    "language_swap": language_swap,
    "system_into_user": system_into_user,
    "drop_result": drop_result,
    "move_answer_half": move_answer_half,
    "swap_column_names": swap_column_names,
}
# applied to every third row only; the last two are whole-dataset changes of the layout
PARTIAL = set(TEXT_CORRUPTIONS) - {"move_answer_half", "swap_column_names"}
