"""Conversations spread over numbered or paired columns: `message_1 … message_N` (CAMEL), `question_1/answer_1,
question_2/answer_2`, `human_1/gpt_1`, `role_1/content_1`, `turn_1_user/turn_1_assistant`.

Columns are grouped by the number in their name; each number is one turn (one text column) or one exchange (two).
The order of turns is the order of the numbers, never the column order. Roles come from a role column of the
same number whose values are role labels, from the column names (`question`/`answer`, `human`/`gpt`), or, for
one unlabelled text per number, from alternation with the evidence of which side reads like prompts. Numbered
columns that read alike and are not named as turns (`option_1..4`, `sentence1/2`) are not a conversation.
The spec lists every turn column with its role (`TurnColumnsSpec`), so the reading is data a reviewer sees.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from adapters.infer.column_names import PROMPT_NAMES, RESPONSE_NAMES
from adapters.infer.roles import _prompt_like
from adapters.map import structure as st
from adapters.map.aliases import canonical_role

if TYPE_CHECKING:
    from adapters.detected import Detected

NUMBERED = (
    re.compile(r"^(?P<stem>[A-Za-z][A-Za-z_ \-]*?)[_\- ]?(?P<n>\d{1,3})$"),  # message_1, question2
    re.compile(r"^(?P<pre>[A-Za-z]+)[_\-]?(?P<n>\d{1,3})[_\-](?P<stem>[A-Za-z][\w\-]*)$"),  # turn_1_user
)
TURN_STEMS = ("message", "msg", "turn", "utterance", "content", "text", "dialog", "dialogue", "conversation", "speech")
MAX_TURNS = 200


def _numbered(order: list[str]) -> dict[int, dict[str, str]]:
    groups: dict[int, dict[str, str]] = defaultdict(dict)
    for col in order:
        for rx in NUMBERED:
            m = rx.match(col)
            if m:
                groups[int(m.group("n"))][m.group("stem").strip("_- ").lower()] = col
                break
    return dict(groups)


def _texty(rows: list[dict[str, Any]], col: str, varied: bool = True) -> bool:
    values = [r.get(col) for r in rows if r.get(col) not in (None, "")]
    if not values or not all(isinstance(v, str) for v in values):
        return False
    stats = st.text_stats(values)  # one value on every row is metadata (CAMEL's role_1), not a turn
    return stats.texty >= 0.15 and (not varied or stats.distinct >= 2 or len(values) < 3)


def _role_column(rows: list[dict[str, Any]], col: str) -> bool:
    values = [v for v in (r.get(col) for r in rows) if isinstance(v, str)]
    known = sum(canonical_role(v) in ("system", "user", "assistant", "tool") for v in values)
    return bool(values) and known >= 0.9 * len(values)


def _side(stem: str) -> str | None:
    role = canonical_role(stem)
    if role in ("user", "assistant"):
        return role
    if stem in PROMPT_NAMES:
        return "user"
    if stem in RESPONSE_NAMES:
        return "assistant"
    return None


def detect_turn_columns(d: Detected, rows: list[dict[str, Any]], skip: set[str]) -> bool:
    order = [k for k in dict.fromkeys(k for r in rows for k in r) if k not in skip]
    numbered = _numbered(order)
    # stems that hold varied text somewhere (`message`); any column of such a stem is a turn, even one whose few
    # sampled values happen to repeat
    text_stems = {s for g in numbered.values() for s, c in g.items() if _texty(rows, c)}
    groups = {n: g for n, g in numbered.items() if text_stems & set(g)}
    if len(groups) < 2 or len(groups) > MAX_TURNS:
        return False
    turns: list[dict[str, Any]] = []
    why = ""
    for n in sorted(groups):
        g = groups[n]
        texts = {s: c for s, c in g.items() if s in text_stems and _texty(rows, c, varied=False)}
        roles = {s: c for s, c in g.items() if s not in texts and _role_column(rows, c)}
        if len(texts) == 1 and roles:
            turns.append({"field": next(iter(texts.values())), "role_field": next(iter(roles.values()))})
            why = "each number has a text column and a role column"
        elif len(texts) == 1:
            turns.append({"field": next(iter(texts.values())), "role": None})
        elif len(texts) == 2:
            sides = {s: _side(s) for s in texts}
            if sorted(v for v in sides.values() if v) != ["assistant", "user"]:
                return False
            user = next(s for s, v in sides.items() if v == "user")
            asst = next(s for s, v in sides.items() if v == "assistant")
            turns += [{"field": texts[user], "role": "user"}, {"field": texts[asst], "role": "assistant"}]
            why = f"each number holds one exchange: {user!r} asks, {asst!r} answers"
        else:
            return False
    unlabelled = [t for t in turns if "role_field" not in t and t.get("role") is None]
    if unlabelled:
        if len(unlabelled) != len(turns):
            return False
        stems = {s for g in groups.values() for s in g}
        even = [r.get(t["field"]) for r in rows for t in turns[0::2]]
        odd = [r.get(t["field"]) for r in rows for t in turns[1::2]]
        if _prompt_like(even, odd):
            first, evidence = "user", "the odd-numbered texts read like prompts"
        elif _prompt_like(odd, even):
            first, evidence = "assistant", "the even-numbered texts read like prompts"
        elif stems & set(TURN_STEMS):
            first, evidence = "user", "named as turns; the first speaker is taken to be the user"
        else:
            return False  # numbered texts that read alike and are not named as turns: options, not a dialogue
        other = "assistant" if first == "user" else "user"
        for i, t in enumerate(turns):
            t["role"] = first if i % 2 == 0 else other
        why = f"one text per number, alternating speakers: {evidence}"
    cols = [t["field"] for t in turns]
    d.decide(
        "layout",
        "turn_columns",
        f"a conversation over numbered columns {cols[:6]}{'…' if len(cols) > 6 else ''} ({why})",
    )
    d.decide(
        "turn_columns",
        turns,
        "turns in the order of their numbers; a turn column that is empty ends the conversation: "
        + ", ".join(f"{t['field']}→{t.get('role') or 'role from ' + t['role_field']}" for t in turns[:8]),
        review=bool(unlabelled),
    )
    labels = {r.get(t["role_field"]) for r in rows for t in turns if "role_field" in t}
    role_map = {lab: canonical_role(lab) for lab in labels if isinstance(lab, str) and canonical_role(lab)}
    if role_map:
        d.decide("role_map", role_map, "role labels of the role columns, by the alias table")
    return True
