"""Unknown names (a category, a repo id, a plan, a mix...) as one line that lists what is known.

Every flag or argument that takes a name checks it against the names that exist, and a typo fails
with the closest matches (difflib's ratio, the same measure `git` and `pip` suggestions use) instead
of silently meaning "nothing": `--weight kodin=2` once gave chat 0 records and exited 0.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from catalog.errors import DraftsetError

MAX_LISTED = 12  # known names listed in the message; more are counted, not printed


def closest(value: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Known names that look like `value`, best first (case-insensitive; a repo id's name part counts too)."""
    names = sorted(set(known))
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.lower(), name)
        by_lower.setdefault(name.rsplit("/", 1)[-1].lower(), name)  # `owner/nmae` and `nmae` both find it
    picks: list[str] = []
    for key in (value.lower(), value.rsplit("/", 1)[-1].lower()):
        for hit in difflib.get_close_matches(key, list(by_lower), n=n, cutoff=0.6):
            if by_lower[hit] not in picks:
                picks.append(by_lower[hit])
    return picks[:n]


def unknown_name(
    what: str, value: str, known: Iterable[str], *, where: str = "", hint: str | None = None
) -> DraftsetError:
    """The error for a name that is not among `known`: what, where, did-you-mean and the known names."""
    names = sorted(set(known))
    near = closest(value, names)
    place = f" for {where}" if where else ""
    if not names:
        return DraftsetError(f"unknown {what} {value!r}{place}: there are none yet", hint=hint)
    shown = ", ".join(names[:MAX_LISTED]) + (f" (+{len(names) - MAX_LISTED} more)" if len(names) > MAX_LISTED else "")
    guess = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return DraftsetError(f"unknown {what} {value!r}{place}{guess} (known: {shown})", hint=hint)


def require_known(what: str, value: str, known: Iterable[str], *, where: str = "", hint: str | None = None) -> str:
    """`value` when it is one of `known`, else the one-line unknown-name error."""
    names = set(known)
    if value in names:
        return value
    raise unknown_name(what, value, names, where=where, hint=hint)
