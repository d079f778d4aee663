"""An answer split over two columns: its opening in one column, the rest in the next, which picks the sentence up
mid-way. Read by content alone, the opening (a long prose column after the request) looks like more prompt, and
the tail like the answer, so the answer's first half would be trained as something the user said.

The evidence is the same continuation as for a prompt split over two fields (adapters/infer/columns.py): on most rows
holding both, the earlier column stops without a sentence end and the response starts with a lower-case word.
What tells the answer's opening from a prompt the answer continues is where the request is: the prompt holds
another column before it (the request), and no prompt column asks for a continuation ("Continue the story",
"Complete the sentence"). A prompt of one column that the answer continues is a completion task (prefix →
continuation), and a request to continue makes the continued text the prompt: neither is an answer's head.
"""

from __future__ import annotations

import re
from statistics import median
from typing import Any

from adapters.infer.column_names import INSTRUCTION_NAMES
from adapters.infer.continuation import CONTINUED_SHARE, MIN_CONTINUED_ROWS, continuation, template_column
from adapters.map import structure as st
from adapters.read.source import RawRow
from adapters.spec import AdapterSpec

MIN_WORDS = 3  # an answer's rest is a phrase at least, not a token
MIN_HEAD_WORDS = 8  # an answer's opening is a sentence's worth of prose, not a data input
_ASKS_TO_CONTINUE = re.compile(
    r"\b(?:continue|continuation|complete|completion|finish|carry on|go on|extend|next (?:sentence|line|word|part))"
    r"\b|续写|接着|补全|続き|続けて|이어",
    re.I,
)


def _asks_to_continue(rows: list[dict[str, Any]], columns: list[str]) -> bool:
    """Some prompt column asks for a continuation on at least half of the rows holding it."""
    for col in columns:
        values = [v for r in rows if isinstance(v := r.get(col), str) and v.strip()]
        if values and sum(1 for v in values if _ASKS_TO_CONTINUE.search(v)) >= 0.5 * len(values):
            return True
    return False


def _prose_column(rows: list[dict[str, Any]], col: str, words: int = MIN_WORDS) -> bool:
    """A column of varied prose: text by its values (as inference reads text columns), of `words` words or more
    (median)."""
    values = [v for r in rows if isinstance(v := r.get(col), str) and v.strip()]
    stats = st.text_stats(values)
    return (
        len(values) >= MIN_CONTINUED_ROWS
        and stats.texty >= 0.15
        and stats.distinct >= 2
        and median(len(v.split()) for v in values) >= words
    )


_OPEN_END = re.compile(r"[^\W\d_]+,?$")  # a text that stops on a word (or a comma after one): a sentence left open
_WORD_START = re.compile(r"[^\W\d_]+(?:[.,;:!?]|$)")  # a tail that starts on a plain word
# a first line of code, not prose: a call, an assignment, brackets, an identifier, a lone import
CODE_FIRST_LINE = re.compile(r"\w\(|\s=\s|==|[{}\[\]<>_`]|^\s*import \w+\s*$")


def starts_in_code(text: str) -> bool:
    """The text's first line is code, or an indented body follows anywhere."""
    return bool(CODE_FIRST_LINE.search(text.split("\n", 1)[0])) or "\n    " in text


def _carried(rows: list[dict[str, Any]], before: str, column: str) -> tuple[int, int] | None:
    """(rows where `column` picks up mid-sentence the prose `before` stops in, rows holding both) when that is most
    of them, else None. Stricter than a prompt split (adapters/infer/columns.py): `before` stops on a word, `column`
    starts on a lower-case word and its first line is no code, so data inputs (`[1, 2, 3]`, `x = 5`) before code
    answers (`def f(x):`, `arr.sort()`) that start lower-case are never read as one text."""
    if not _prose_column(rows, before, MIN_HEAD_WORDS):
        return None
    both = carried = 0
    for r in rows:
        a, b = r.get(before), r.get(column)
        if not (isinstance(a, str) and isinstance(b, str) and a.strip() and b.strip()):
            continue
        both += 1
        head_words, tail = a.split(), b.lstrip()
        code = starts_in_code(tail)  # an indented body anywhere is code
        carried += bool(
            _OPEN_END.search(head_words[-1]) and tail[:1].islower() and _WORD_START.match(tail.split()[0]) and not code
        )
    return (carried, both) if both >= MIN_CONTINUED_ROWS and carried >= CONTINUED_SHARE * both else None


def answer_head(rows: list[dict[str, Any]], prompt: list[str], response: str | None) -> tuple[str, int, int] | None:
    """(the prompt column holding the answer's opening, rows where `response` continues it, rows holding both),
    or None. Only a prompt column after the first can be the head: the first is the request it answers."""
    if response is None or len(prompt) < 2:
        return None
    for col in reversed(prompt[1:]):
        if col.lower() in INSTRUCTION_NAMES or template_column(rows, col):
            continue
        found = _carried(rows, col, response)
        if found:
            others = [c for c in prompt if c != col]
            return None if _asks_to_continue(rows, others) else (col, *found)
    return None


def _continues(rows: list[dict[str, Any]], before: str, column: str) -> tuple[int, int] | None:
    """A prompt's rest, by the prompt-split rule of adapters/infer/columns.py."""
    carried, both = continuation(rows, before, column)
    return (carried, both) if both >= MIN_CONTINUED_ROWS and carried >= CONTINUED_SHARE * both else None


def _ends_on_code(rows: list[dict[str, Any]], col: str) -> bool:
    """Most values end on a closed code fence: a finished block, not a sentence left open."""
    values = [v.rstrip() for r in rows if isinstance(v := r.get(col), str) and v.strip()]
    return bool(values) and sum(v.endswith("```") for v in values) >= 0.5 * len(values)


def answer_tail(
    rows: list[dict[str, Any]], response: str | None, unread: list[str], prompt: list[str]
) -> tuple[str, int, int] | None:
    """(the column among `unread` that carries on the sentence `response` leaves open, rows, rows holding both):
    the rest of an answer the response column only opens. A column that would as well carry on a prompt column
    is that prompt's rest (a request split in two), never the answer's: which column a tail continues decides."""
    if response is None or template_column(rows, response) or _ends_on_code(rows, response):
        return None
    for col in unread:
        if not _prose_column(rows, col) or any(_continues(rows, p, col) for p in prompt):
            continue  # ids, urls and labels start lower-case too; a prompt's rest is not the answer's
        found = _carried(rows, response, col)
        if found:
            return col, *found
    return None


def split_answer(
    rows: list[dict[str, Any]], prompt: list[str], response: str, texts: list[str]
) -> tuple[list[str], str, str, str] | None:
    """(prompt columns, head, tail, why) where the answer is split over two columns, else None: the response
    continues a prompt column (that column is the opening), or a text column read nowhere continues the response
    (that column is the rest)."""
    head = answer_head(rows, prompt, response)
    if head:
        col, carried, both = head
        why = f"{response!r} continues the sentence of {col!r} in {carried}/{both} rows: {col!r} opens the answer"
        return [c for c in prompt if c != col], col, response, why
    tail = answer_tail(rows, response, [k for k in texts if k not in prompt and k != response], prompt)
    if tail:
        col, carried, both = tail
        why = f"{col!r} continues the sentence of {response!r} in {carried}/{both} rows: it is the answer's rest"
        return prompt, response, col, why
    return None


def split_answer_problems(spec: AdapterSpec, raw: list[RawRow]) -> list[dict[str, Any]]:
    """The contract's invariant for any spec (hand-written, LLM, inferred): a response column that continues the
    sentence of a prompt column fails unless that column is declared as the answer's opening."""
    cols = spec.columns if spec.layout == "columns" else None
    if cols is None or cols.response_is_tool_calls or cols.response_head:
        return []
    rows = [r.row for r in raw if r.error is None and isinstance(r.row, dict)]
    found = answer_head(rows, cols.prompt, cols.response)
    if found is not None:
        col, carried, both = found
        detail = (
            f"the answer column {cols.response!r} continues the sentence of prompt column {col!r} in "
            f"{carried}/{both} rows: the answer's opening is read as prompt; declare it as columns.response_head"
        )
    else:
        read = {*cols.prompt, cols.response, cols.history}
        unread = [k for k in dict.fromkeys(k for r in rows for k in r) if k not in read]
        found = answer_tail(rows, cols.response, unread, cols.prompt)
        if found is None:
            return []
        col, carried, both = found
        detail = (
            f"column {col!r} continues the sentence of the answer column {cols.response!r} in {carried}/{both} "
            f"rows: the answer is split; make {cols.response!r} columns.response_head and {col!r} the response"
        )
    return [{"name": "answer_split", "level": "error", "detail": detail, "rows": []}]
