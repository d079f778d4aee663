"""Speaker markers learned from the rows: a chat rendered into one text column by a template that no grammar in
adapters/map/rendered.py names (OpenChat's `GPT4 Correct User:`, Command-R's `<|USER_TOKEN|>`, Granite's
`<|start_of_role|>user<|end_of_role|>`, a house template of its own) is still a chat when its markers are
consistent across rows.

What counts as a marker is a recurring string of one of two kinds: a special token (`<|...|>`, `<｜...｜>`,
`<name>`, `[NAME]`, optionally followed by a role word and more tokens: `<start_of_turn>user`), or a label before
a colon at a line start or right after a special token (`GPT4 Correct User:`). A marker's role is the role word
it carries (through the alias table; the last one wins, so `GPT4 Correct User` is the user). Recurring tokens
that carry no role are end-of-turn / framing tokens, stripped from turn edges. Only when no marker carries a
role may exactly two role-less tokens stand for the two speakers, by position (the one that opens the rows is
the user), and only if they strictly alternate.

Evidence, not a list: the learned markers must split at least 80% of the sampled rows into turns that hold a
user and an assistant turn and alternate (no two turns of one speaker in a row); prose, whose headings and
`Note:` labels carry no speaker or do not alternate, is not mistaken for a chat.
"""

from __future__ import annotations

import re
from collections import Counter

from adapters.map.aliases import canonical_role
from adapters.map.rendered import SPEAKERS, Grammar, turns_of

_TOKEN = r"<\|[^<>|\n]{1,40}\|>|<｜[^<>｜\n]{1,40}｜>|<[A-Za-z_][\w-]{1,30}>|\[/?[A-Z][A-Z_]{1,20}\]"
# A special token, optionally a role word glued to it (and more tokens): `<start_of_turn>user`, `<|im_user|>user<|im_middle|>`.
HEADER = re.compile(rf"(?:{_TOKEN})(?:[A-Za-z_]{{2,20}}(?=\n|<|\[)(?:{_TOKEN})*)?:?")
TOKEN = re.compile(_TOKEN)
# A label before a colon, at a line start or right after a special token.
LABEL = re.compile(r"(?:^|\n|(?<=>)|(?<=\]))[ \t]*((?:#{1,3} )?[A-Za-z][\w]*(?: [A-Za-z][\w]*){0,3}):")
SHARE = 0.8  # rows the markers must read as an alternating dialogue
MIN_ROWS = 0.2  # rows a marker (or a stripped token) must occur in to be part of the template


def marker_role(marker: str) -> str | None:
    """The speaker a marker names: its last word the alias table maps (`<|USER_TOKEN|>` → user)."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+|_", marker) if w]
    roles = [canonical_role(w) for w in words]
    found = [r for r in roles if r in SPEAKERS]
    return found[-1] if found else None


def _candidates(text: str) -> set[str]:
    found = {m.group(0) for m in HEADER.finditer(text)} | {m.group(0) for m in TOKEN.finditer(text)}
    return found | {f"{m.group(1)}:" for m in LABEL.finditer(text)}


def _is_markup(token: str, texts: list[str]) -> bool:
    """An HTML/XML element (`<div>` with its `</div>`) is markup, never a speaker."""
    m = re.fullmatch(r"<([A-Za-z_][\w-]*)>", token)
    if m is None:
        return False
    return any(f"</{m.group(1)}>" in t for t in texts)


def _alternates(turns: list[tuple[str, str]]) -> bool:
    roles = [r for r, _ in turns]
    body = roles[1:] if roles[:1] == ["system"] else roles
    return (
        "user" in body
        and "assistant" in body
        and "system" not in body
        and all(a != b for a, b in zip(body, body[1:], strict=False))
    )


def _reads(texts: list[str], markers: dict[str, str], ends: list[str], preamble: str | None) -> int:
    ok = 0
    for text in texts:
        try:
            turns = turns_of(text, markers, anchored=False, ends=ends, preamble=preamble)
        except ValueError:
            continue
        ok += _alternates(turns)
    return ok


def learn_grammar(texts: list[str]) -> tuple[Grammar, dict[str, str], int] | None:
    """A grammar learned from `texts` (literal markers → roles, stripped tokens), with the rows it reads as an
    alternating dialogue; None unless it reads at least 80% of them."""
    texts = [t for t in texts if t.strip()]
    if len(texts) < 2:
        return None
    df = Counter(c for t in texts for c in _candidates(t))
    recurring = [c for c, n in df.items() if n >= MIN_ROWS * len(texts) and not _is_markup(c, texts)]
    markers = {c: role for c in recurring if (role := marker_role(c))}
    roleless = [c for c in recurring if c not in markers and TOKEN.fullmatch(c)]
    # A marker and a longer form of it (`<|im_user|>` and `<|im_user|>user<|im_middle|>`, `<human>` and
    # `<human>:`): the longer one when they always occur together, else the shorter (the longer then glued
    # content to it).
    markers = {
        c: r
        for c, r in markers.items()
        if not any(c != o and o.startswith(c) and df[o] >= df[c] for o in markers)
        and not any(o != c and c.startswith(o) and df[o] > df[c] for o in markers)
    }
    if not {"user", "assistant"} <= set(markers.values()):
        markers = _by_position(texts, roleless)
        if not markers:
            return None
    fit = _fit(texts, markers, roleless)
    # A role word that also heads lines inside turns (`Answer:` in an assistant's text) splits them wrongly:
    # the set without it, if that reads more rows. Between sets that read as many, the one keeping more special
    # tokens (a template's tokens are never content, a word label may be), then the more specific markers.
    if fit[3] < SHARE * len(texts) and len(markers) <= 8:
        rank = lambda f: (f[3], sum(bool(TOKEN.match(m)) for m in f[0]), sum(map(len, f[0])))  # noqa: E731
        for drop in sorted(markers):
            rest = {m: r for m, r in markers.items() if m != drop}
            if {"user", "assistant"} <= set(rest.values()):
                fit = max(fit, _fit(texts, rest, roleless), key=rank)
    markers, ends, preamble, ok = fit
    if ok < SHARE * len(texts):
        return None
    markers_rx = tuple((re.escape(m), r) for m, r in markers.items())
    grammar = Grammar("learned from the rows", markers_rx, ends=tuple(ends), preamble=preamble)
    return grammar, markers, ok


def _fit(
    texts: list[str], markers: dict[str, str], roleless: list[str]
) -> tuple[dict[str, str], list[str], str | None, int]:
    """(markers, stripped tokens, preamble role, rows read as an alternating dialogue) for one marker set."""
    markers = dict(sorted(markers.items()))  # one order whatever the hash seed: the spec hash is stable
    ends = sorted(c for c in roleless if c not in markers and not any(c in m for m in markers))
    preamble = "system" if any(_head(t, markers, ends) for t in texts) else None
    return markers, ends, preamble, _reads(texts, markers, ends, preamble)


def _head(text: str, markers: dict[str, str], ends: list[str]) -> str:
    """Text before the first marker, framing tokens aside (`<BOS_TOKEN>` is no system prompt)."""
    first = min((i for m in markers if (i := text.find(m)) >= 0), default=-1)
    head = text[:first] if first > 0 else ""
    for token in ends:
        head = head.replace(token, "")
    return head.strip()


def _by_position(texts: list[str], roleless: list[str]) -> dict[str, str]:
    """Two role-less tokens that open and answer every row in turn (`[Q]`/`[A]`): the opener is the user."""
    firsts: Counter[str] = Counter()
    for text in texts:
        hits = sorted((text.find(c), c) for c in roleless if c in text)
        if hits:
            firsts[hits[0][1]] += 1
    if not firsts:
        return {}
    opener, n = firsts.most_common(1)[0]
    if n < SHARE * len(texts):
        return {}
    for other in sorted(roleless):
        if other == opener:
            continue
        candidate = {opener: "user", other: "assistant"}
        if _reads(texts, candidate, [c for c in roleless if c not in candidate], None) >= SHARE * len(texts):
            return candidate
    return {}
