"""Structural statistics over sampled rows: where the turn lists are, which key holds the speaker and
which the text, which string columns read like prompts and which like answers.

Names are priors only (a small bonus); the decision comes from the values: a speaker key has few
distinct labels that alternate along a turn list; a content key holds long, varied, wordy text. Paths
are dotted and may go through nested objects (`episode.turns`, `payload.text`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from adapters.map.aliases import CONTENT_KEYS, ROLE_KEYS, TURN_LIST_COLUMNS, canonical_role
from catalog import limits

MAX_DEPTH = 3
WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
# Scripts written without spaces between words (Han, kana, Thai): a run of them is many words, not one, and a
# string in them with no space is prose, not an id. Counting ~2 characters a word keeps their statistics on
# the scale of spaced languages, so no length or token threshold quietly assumes English. Hangul is spaced.
SPACELESS = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def decoded(value: Any) -> tuple[Any, bool]:
    """(value, was_json_string): strings holding a JSON array/object are decoded for inspection."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return limits.loads_limited(value), True
        except limits.LimitExceeded:  # bad, too deep or huge: inspected as the plain string it is
            pass
    return value, False


def zipped(value: Any) -> Any:
    """A conversation stored as a struct of arrays (`{"speaker": [...], "text": [...]}`, as `datasets` hands a
    `Sequence` of structs back) as the list of turn objects it stands for; any other value unchanged. The
    arrays must be of one length and one of them text, so a record of unrelated lists is not zipped."""
    if not isinstance(value, dict) or len(value) < 2:
        return value
    arrays = list(value.values())
    if not all(isinstance(a, list) for a in arrays) or len({len(a) for a in arrays}) != 1 or not arrays[0]:
        return value
    if not any(all(isinstance(x, str) for x in a) for a in arrays):
        return value
    keys = list(value)
    return [dict(zip(keys, items, strict=True)) for items in zip(*arrays, strict=True)]


def walk(value: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every field under a row, through nested objects (not into lists)."""
    if not isinstance(value, dict) or depth > MAX_DEPTH:
        return
    for key, item in value.items():
        if not isinstance(key, str):
            continue
        path = f"{prefix}{key}"
        yield path, item
        if isinstance(item, dict):
            yield from walk(item, path + ".", depth + 1)


def get(row: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(row, dict):
            return None
        row = row.get(part)
    return row


@dataclass
class TextStats:
    n: int = 0  # values seen
    strings: int = 0  # of which strings
    chars: int = 0
    words: int = 0
    distinct: int = 0
    questions: int = 0  # ending in '?' (prompt-like)
    idlike: int = 0  # one token, no spaces (ids, hashes, labels, paths)

    @property
    def mean_chars(self) -> float:
        return self.chars / self.strings if self.strings else 0.0

    @property
    def texty(self) -> float:
        """0..1: how much this reads like natural-language text rather than ids or labels."""
        if not self.strings:
            return 0.0
        coverage = self.strings / self.n
        words = min(1.0, (self.words / self.strings) / 4)
        varied = self.distinct / self.strings
        return coverage * words * (0.3 + 0.7 * varied) * (1 - self.idlike / self.strings)


def text_stats(values: list[Any]) -> TextStats:
    s = TextStats(n=len(values))
    seen = set()
    for v in values:
        if isinstance(v, str):
            s.strings += 1
            s.chars += len(v)
            head = v[:4000]
            spaceless = len(SPACELESS.findall(head))
            words = len(WORD.findall(SPACELESS.sub(" ", head) if spaceless else head)) + spaceless // 2
            s.words += words
            seen.add(v[:200])
            stripped = v.strip()
            s.questions += stripped.endswith(("?", "？"))
            s.idlike += " " not in stripped and len(stripped) < 80 and not spaceless
    s.distinct = len(seen)
    return s


def turn_list_paths(rows: list[dict[str, Any]]) -> dict[str, tuple[list[list[Any]], int, str]]:
    """Path → (lists seen, how many were JSON strings, kind `dicts`|`strings`) for list-valued fields."""
    lists: dict[str, list[list[Any]]] = {}
    encoded: Counter[str] = Counter()
    present: Counter[str] = Counter()
    for row in rows:
        for path, value in walk(row):
            if value is None:
                continue
            present[path] += 1
            value, was_json = decoded(value)
            value = zipped(value)
            if isinstance(value, list) and value:
                lists.setdefault(path, []).append(value)
                encoded[path] += was_json
    out = {}
    for path, found in lists.items():
        if len(found) < 0.5 * present[path]:
            continue
        items = [t for lst in found for t in lst]
        if all(isinstance(t, dict) for t in items):
            out[path] = (found, encoded[path], "dicts")
        elif all(isinstance(t, str) for t in items) and sum(map(len, found)) >= 1.5 * len(found):
            out[path] = (found, encoded[path], "strings")
    return out


def leaf_paths(turns: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Dotted leaf paths of turn objects (one level of nesting: `payload.text`) → values per turn."""
    paths: dict[str, list[Any]] = {}
    for t in turns:
        for path, value in walk(t, depth=MAX_DEPTH - 1):
            if not isinstance(value, dict):
                paths.setdefault(path, [])
    for path in paths:
        paths[path] = [get(t, path) for t in turns]
    return paths


def alternation(lists: list[list[Any]], path: str) -> float:
    """Fraction of consecutive turn pairs whose labels differ (speakers take turns)."""
    pairs = diff = 0
    for lst in lists:
        labels = [get(t, path) for t in lst if isinstance(t, dict)]
        for a, b in zip(labels, labels[1:]):
            pairs += 1
            diff += a != b
    return diff / pairs if pairs else 0.5  # single-turn lists say nothing either way


def role_key_score(lists: list[list[dict]], path: str, values: list[Any]) -> tuple[float, str]:
    """How much a key looks like the speaker key, with the evidence."""
    strings = [v for v in values if isinstance(v, str)]
    if len(strings) < 0.9 * len(values) or not strings:
        return 0.0, ""
    labels = Counter(strings)
    if not 1 <= len(labels) <= 12 or len(labels) > max(2, 0.5 * len(strings)):
        return 0.0, ""
    alt = alternation(lists, path)
    known = sum(n for label, n in labels.items() if canonical_role(label)) / len(strings)
    prior = 0.1 if path.rsplit(".", 1)[-1] in ROLE_KEYS else 0.0
    score = 0.45 * alt + 0.45 * known + prior + (0.05 if 2 <= len(labels) <= 6 else 0.0)
    why = (
        f"{len(labels)} distinct labels {sorted(labels)[:6]}, alternating on {alt:.0%} of turn pairs, "
        f"{known:.0%} known role names"
    )
    return score, why


def content_key_score(path: str, values: list[Any]) -> tuple[float, str]:
    """How much a key looks like the turn text (long, wordy, varied; content parts count as text)."""
    flat = []
    for v in values:
        if isinstance(v, list) and v and all(isinstance(p, dict) for p in v):
            v = " ".join(str(p.get("text", "")) for p in v)  # content parts
        flat.append(v)
    stats = text_stats(flat)
    if stats.strings < 0.5 * len(values):
        return 0.0, ""
    prior = 0.15 if path.rsplit(".", 1)[-1] in CONTENT_KEYS else 0.0
    score = stats.texty + min(0.3, stats.mean_chars / 2000) + prior
    return score, f"{stats.strings}/{len(values)} text values, mean {stats.mean_chars:.0f} chars"


def name_prior(path: str) -> float:
    name = path.rsplit(".", 1)[-1].lower()
    return 0.1 if name in TURN_LIST_COLUMNS else 0.0
