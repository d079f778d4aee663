"""What a raw field's values are: prose or identifiers, metadata by value (urls, ids, timestamps) or by
name (scores, languages, provenance), and how much of a text another text already carries. Pure functions
over values: the accounting (adapters/infer/accounting.py) decides with them what must be carried or named.
"""

from __future__ import annotations

import re
from typing import Any

from adapters.map.markup import fragments
from adapters.map.structure import decoded

SUBSTANTIAL_MEDIAN = 40  # chars: a field whose median value is this long holds text, not a label
SUBSTANTIAL_SHARE = 0.05  # ... or this share of all the rows' text, with values at least SHORT long
SHORT = 12


def words(text: str) -> int:
    """Words, counting each CJK character as one (CJK prose has no spaces)."""
    return len(text.split()) + len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", text))


def kind_of(value: Any) -> str:
    return "text" if isinstance(value, str) else "boolean" if isinstance(value, bool) else "number"


_DIFF = re.compile(r"^(?:diff --git |--- \S)", re.M)


def coverage(text: str, haystack: str) -> float:
    """Share of `text`'s characters found in `haystack`, line by line (a rendered copy still counts).

    A unified diff counts by its added lines: a trajectory's final patch repeats the edits its turns made.
    A JSON string (a second encoding of the turns beside their list column) counts by the strings it holds:
    its keys, quotes and escapes are the encoding, not text a copy must repeat."""
    lines = fragments(text, min_chars=1)  # markup and speaker headings are not text a copy must repeat
    value, was_json = decoded(text)
    if was_json:
        lines = [ln for s in _strings(value) for ln in fragments(s, min_chars=1)]
    if _DIFF.search(text):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        lines = [ln[1:].strip() for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
        lines = [ln for ln in lines if ln]
    total = sum(len(ln) for ln in lines)
    return sum(len(ln) for ln in lines if ln in haystack) / total if total else 1.0


def _strings(value: Any) -> list[str]:
    """The string leaves of a decoded JSON value, in order (an explicit stack: no recursion limit to hit)."""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def prose(values: list[str]) -> bool:
    """Text a model could be trained on: has spaces, or letters outside ASCII (CJK prose has no spaces).
    A single ASCII token (a slug, a repo id, a hash) is an identifier whatever its length."""
    return any(re.search(r"\s", v.strip()) or re.search(r"[^\x00-\x7f]", v) for v in values)


def substantial(median_chars: float, share: float) -> bool:
    return median_chars >= SUBSTANTIAL_MEDIAN or (share >= SUBSTANTIAL_SHARE and median_chars >= SHORT)


# Values that are metadata whatever their length: not text a model should be trained on.
_META_VALUES = (
    ("urls", re.compile(r"^\s*(?:https?|s3|gs|hf|file)://\S+\s*$")),
    (
        "ids",
        re.compile(r"^\s*(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|\d+)\s*$", re.I),
    ),
    (
        "timestamps",
        re.compile(r"^\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\s*$"),
    ),
    ("file paths", re.compile(r"^\s*[\w.\-]*(?:/[\w.\-]+)+\.\w{1,6}\s*$")),
)
_META_KEYS = (
    ("ids", re.compile(r"(?:^|[_.\[\]])(?:id|uuid|guid|hash|sha|md5|idx|index|key)$|_id$|Id$", re.I)),
    ("urls", re.compile(r"(?:url|uri|link|href|source_file|path)$", re.I)),
    ("timestamps", re.compile(r"(?:time|date|timestamp|created|updated|_at)$", re.I)),
    (
        "scores",
        re.compile(
            r"(?:score|rating|reward|prob|probability|confidence|toxicity|quality|length|count|(?:^|_)n_\w+)s?$", re.I
        ),
    ),
    ("moderation", re.compile(r"(?:moderation|flagged|categories|category_scores|toxic|nsfw|harm\w*)", re.I)),
    ("language", re.compile(r"(?:^|[_.])(?:lang|language|locale)$", re.I)),
    ("license and provenance", re.compile(r"(?:license|source|origin|dataset|model|annotator|author|split)$", re.I)),
)


def value_reason(values: list[str]) -> str | None:
    """Metadata by its values alone (urls, ids, timestamps, file paths), whatever their length."""
    texts = [v for v in values if isinstance(v, str) and v.strip()]
    for why, rx in _META_VALUES:
        if texts and all(rx.match(v) for v in texts):
            return why
    return None


def metadata_reason(path: str, values: list[str]) -> str | None:
    """Why a short field is metadata: from its values, else from its name (only ever asked of short fields)."""
    by_value = value_reason(values)
    if by_value:
        return by_value
    last = [p for p in re.split(r"\.|\[\]", path) if p][-1]
    for why, rx in _META_KEYS:
        if rx.search(last) or rx.search(path):
            return why
    return None
