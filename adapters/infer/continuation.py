"""One text split over two columns: where a column carries on the sentence the column before it left open.

Read by column detection (a request or an answer over two columns), the contract (a split joined with a blank
line) and the answer-head and request-column rules."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

# Where a sentence may end: terminal punctuation in any script, or a closing quote or bracket after it.
_SENTENCE_END = re.compile(r"[.!?;:。！？；：…]['\"”’)\]}」』»]*\s*$")
CONTINUED_SHARE = 0.8  # of the rows holding both columns
MIN_CONTINUED_ROWS = 3


def continuation(rows: list[dict[str, Any]], before: str, column: str) -> tuple[int, int]:
    """(rows where `column` carries on the sentence `before` left open, rows holding text in both): `before`
    stops without a sentence end and `column` starts with a lower-case word. One text split over two fields,
    which a blank line between them would break mid-sentence. Scripts without case never count."""
    both = [
        (a.rstrip(), b.lstrip())
        for r in rows
        if isinstance(a := r.get(before), str) and isinstance(b := r.get(column), str) and a.strip() and b.strip()
    ]
    carried = sum(1 for a, b in both if not _SENTENCE_END.search(a) and b[:1].islower())
    return carried, len(both)


def continued_columns(rows: list[dict[str, Any]], prompt: list[str]) -> list[str]:
    """The prompt columns that continue the sentence of the column before them on most rows. A column before
    them that repeats one value on most rows is a template's instruction ("Classify the sentiment" over
    lower-cased reviews), not the first half of a sentence each row splits: its input keeps the blank line."""
    out = []
    for before, column in zip(prompt, prompt[1:]):
        carried, both = continuation(rows, before, column)
        if both >= MIN_CONTINUED_ROWS and carried >= CONTINUED_SHARE * both and not template_column(rows, before):
            out.append(column)
    return out


def template_column(rows: list[dict[str, Any]], column: str) -> bool:
    """One value (stripped) on more than half the rows holding text in `column`."""
    values = Counter(v.strip() for r in rows if isinstance(v := r.get(column), str) and v.strip())
    return bool(values) and values.most_common(1)[0][1] > 0.5 * sum(values.values())
