"""A system prompt pasted in front of the first user turn, told by structure when no row keeps a system role
to compare with (an export that flattened every system turn into the user's text).

The evidence is the paragraph itself and where it sits, not one phrase: one paragraph, repeated verbatim,
opens the first user turn of several rows and is set off from the request by a blank line; it addresses the
responder as a persona ("You are a careful assistant.", "You're an expert …", "Act as …"); it refers to no
input that follows it (a task definition does: "You are *given* a review …", "the passage *below*"), so
Natural-Instructions' definitions stay prompts; and what follows it is a request of its own, not a field
label (`Input: …`) the paragraph would introduce. A preamble on every row is the dataset's design, consistent
in training and serving; one on only some rows is the trace of the rows that had a system turn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

MIN_CHARS = 30  # a wide (CJK) character counts two: a persona sentence is shorter in characters there
MOST_ROWS = 0.9  # a preamble on at least this share of rows is the dataset's own design, not a pasted turn
_PERSONA = re.compile(
    r"^(?:you are|you're|act as|you will act as|i want you to act as|as an? (?:ai|assistant)|your name is|"
    r"your role is|你是|您是|你现在是|あなたは|당신은|너는|ты\s|вы\s)",
    re.I,
)
# a persona that is handed an input is a task definition ("You are given a sentence ...")
_HANDED = re.compile(
    r"^you(?: are|'re)\s+(?:\w+ly\s+)?(?:given|provided|shown|presented|asked|tasked|going|to|being|about)\b", re.I
)
_REFERS_TO_INPUT = re.compile(
    r"\b(?:given|following|below|above|provided|input|passage|attached)\b|给定|下面|以下|下列|如下|次の|以下の|다음",
    re.I,
)
_FIELD_LABEL = re.compile(r"^[\w ]{1,24}(?::\s|：)")
_BLANK = re.compile(r"\n[ \t]*\n")


def _split(text: str) -> tuple[str, str]:
    """(first paragraph, the rest) of a turn, split at its first blank line; ('', text) without one."""
    parts = _BLANK.split(text.strip(), maxsplit=1)
    return (" ".join(parts[0].split()), parts[1].strip()) if len(parts) == 2 else ("", text)


def _width(text: str) -> int:
    return sum(2 if ord(ch) >= 0x2E80 else 1 for ch in text)


def persona(paragraph: str) -> bool:
    """A paragraph that tells the responder who to be, without introducing an input."""
    return bool(_PERSONA.match(paragraph)) and not _HANDED.match(paragraph) and not _REFERS_TO_INPUT.search(paragraph)


def pasted_preambles(first_user_turns: Iterable[str], min_rows: int = 2) -> set[str]:
    """The persona paragraphs that open at least `min_rows` first user turns, followed by a request of their own,
    on fewer than MOST_ROWS of the rows. Nothing when they open MOST_ROWS of the rows between them: a persona on
    every row is the design whether it is one persona or one per character (a role-play set)."""
    turns = list(first_user_turns)
    heads: Counter[str] = Counter()
    for text in turns:
        head, rest = _split(text)
        if _width(head) >= MIN_CHARS and rest and not _FIELD_LABEL.match(rest) and persona(head):
            heads[head] += 1
    recurring = {h: n for h, n in heads.items() if n >= min_rows}
    if sum(recurring.values()) >= MOST_ROWS * len(turns):
        return set()
    return set(recurring)


def opens_with(text: str, preambles: set[str]) -> str | None:
    """The preamble of `preambles` that opens `text` as its own paragraph, if any."""
    head, _ = _split(text)
    return head if head in preambles else None
