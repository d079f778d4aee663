"""Split N samples over groups by weight, never giving a group more than it can hold.

Used twice by the mix: over categories (plan weights) and, inside a category, over its sources
(per-source caps). Largest-remainder rounding keeps the total exact; what a full group cannot take
is passed on to the others in proportion to their weights (water-filling), so a small category
never makes the mix come out short while another source still has rows.
"""

from __future__ import annotations

from collections.abc import Mapping


def allocate(total: int, weights: Mapping[str, float], capacity: Mapping[str, int]) -> dict[str, int]:
    """Integer share of `total` for each key; sum == min(total, sum(capacity)); deterministic."""
    if total < 0:
        raise ValueError("total must be >= 0")
    share = {k: 0 for k in weights}
    open_keys = sorted(k for k in weights if weights[k] > 0 and capacity.get(k, 0) > 0)
    remaining = min(total, sum(capacity.get(k, 0) for k in open_keys))
    while remaining > 0 and open_keys:
        weight_sum = sum(weights[k] for k in open_keys)
        exact = {k: remaining * weights[k] / weight_sum for k in open_keys}
        give = {k: int(exact[k]) for k in open_keys}
        # Largest remainder first; ties broken by key so the result never depends on dict order.
        by_remainder = sorted(open_keys, key=lambda k: (-(exact[k] - give[k]), k))
        for k in by_remainder[: remaining - sum(give.values())]:
            give[k] += 1
        for k in open_keys:
            room = capacity[k] - share[k]
            share[k] += min(give[k], room)
        remaining = min(total, sum(capacity.get(k, 0) for k in weights if weights[k] > 0)) - sum(share.values())
        open_keys = [k for k in open_keys if share[k] < capacity[k]]
    return share
