"""The four outcomes every adapter bench scores (schema scoreboard, LLaMA-Factory registry, mutation kill).

A refusal is not a safe default: refusing a valid dataset loses it as surely as mapping it wrong, so a wrong
refusal is a failure of its own, counted beside silently wrong records.

    right                the expected mapping: the contract passes and every row equals its truth
    refused-as-expected  the data must be refused, and is, by the expected name (a mutant killed)
    refused-wrongly      a valid dataset refused (a proposal refusal, a failing contract: a false alarm on a
                         control), or a refusal under another name than the expected one
    silently-wrong       the contract passes but the records differ from the truth, or data that must be
                         refused passes
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

RIGHT, REFUSED_OK, REFUSED_WRONGLY, SILENT = "right", "refused-as-expected", "refused-wrongly", "silently-wrong"
OUTCOMES = (RIGHT, REFUSED_OK, REFUSED_WRONGLY, SILENT)
GOAL_RIGHT = 0.95  # share right or refused as expected; with 0 silently wrong and 0 refused wrongly


def refusal(expect: str, verdict: str | None) -> str:
    """The outcome of a refusal by `verdict` (None: a failing contract or no proposal) when `expect` was
    expected (`map` or `refuse:<verdict>`)."""
    return REFUSED_OK if verdict is not None and expect == f"refuse:{verdict}" else REFUSED_WRONGLY


def passed(expect: str, matches_truth: bool) -> str:
    """The outcome of a passing contract: right when the rows equal their truth and nothing was to be refused."""
    return RIGHT if expect == "map" and matches_truth else SILENT


def tally(outcomes: Iterable[str]) -> dict[str, int]:
    counts = Counter(outcomes)
    return {k: counts.get(k, 0) for k in OUTCOMES}


def summary_line(counts: dict[str, int], what: str) -> str:
    """One line: the four counts, the share right and whether the goal holds."""
    total = sum(counts.values())
    good = counts[RIGHT] + counts[REFUSED_OK]
    share = good / total if total else 1.0
    met = share >= GOAL_RIGHT and counts[SILENT] == 0 and counts[REFUSED_WRONGLY] == 0
    return (
        f"{total} {what}: {counts[RIGHT]} right, {counts[REFUSED_OK]} refused as expected, "
        f"{counts[REFUSED_WRONGLY]} refused wrongly, {counts[SILENT]} silently wrong; {share:.0%} right or refused "
        f"as expected (goal ≥ {GOAL_RIGHT:.0%} with none wrong: {'met' if met else 'NOT met'})"
    )
