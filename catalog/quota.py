"""The one allocation of draftset: split N samples over keys by weight, never past a key's capacity.

find's plan uses it to give each dataset its quota (categories by weight, then the best-scored datasets
of a category first); the mix uses it to take a plan's quotas and to pass on what a source cannot give
(`take_quotas`). Pure functions, on the ground floor so that agents and pipeline share them.

Rules, so every figure can be recomputed by hand:
- exact rational arithmetic: N * w / W is never rounded by floating point;
- largest remainder: the integer shares sum to exactly min(N, total capacity);
  ties go to the key that sorts first, so the result never depends on dict order;
- water-filling: what a full key cannot take goes to the others still open, in proportion to their weights;
- tiers (`rank`): keys of a lower rank are filled first; the next rank gets only what is left.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction


def allocate(
    total: int,
    weights: Mapping[str, float],
    capacity: Mapping[str, int],
    rank: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Integer share of `total` for each key of `weights`; sum == min(total, capacity of keys with weight > 0)."""
    if total < 0:
        raise ValueError("total must be >= 0")
    share = {k: 0 for k in weights}
    tiers = sorted({(rank or {}).get(k, 0) for k in weights})
    left = total
    for tier in tiers:
        keys = [k for k in weights if (rank or {}).get(k, 0) == tier]
        given = _water_fill(left, {k: weights[k] for k in keys}, capacity)
        share.update(given)
        left -= sum(given.values())
    return share


def _water_fill(total: int, weights: Mapping[str, float], capacity: Mapping[str, int]) -> dict[str, int]:
    share = {k: 0 for k in weights}
    open_keys = sorted(k for k in weights if weights[k] > 0 and capacity.get(k, 0) > 0)
    remaining = min(total, sum(capacity[k] for k in open_keys))
    while remaining > 0 and open_keys:
        weight_sum = sum(Fraction(weights[k]) for k in open_keys)
        exact = {k: remaining * Fraction(weights[k]) / weight_sum for k in open_keys}
        give = {k: int(exact[k]) for k in open_keys}
        by_remainder = sorted(open_keys, key=lambda k: (-(exact[k] - give[k]), k))
        for k in by_remainder[: remaining - sum(give.values())]:
            give[k] += 1
        for k in open_keys:
            taken = min(give[k], capacity[k] - share[k])
            share[k] += taken
            remaining -= taken
        open_keys = [k for k in open_keys if share[k] < capacity[k]]
    return share


def take_quotas(
    quotas: Mapping[str, int], available: Mapping[str, int], total: int | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """(target, taken) per source for a plan's quotas, when each source holds `available` usable rows.

    target: the quotas scaled to `total` (None: their sum), by `allocate` without capacity limits; when
    total is the quotas' sum, target == quotas exactly. taken: each source gives its target or all it
    has; the shortfall is then shared among the sources with rows to spare, in proportion to their
    quotas (water-filling, ties by key). sum(taken) == min(total, sum(available))."""
    total = sum(quotas.values()) if total is None else total
    weights = {k: float(q) for k, q in quotas.items()}
    target = allocate(total, weights, {k: total for k in quotas})
    taken = {k: min(target[k], max(0, available.get(k, 0))) for k in quotas}
    shortfall = total - sum(taken.values())
    spare = {k: max(0, available.get(k, 0)) - taken[k] for k in quotas}
    extra = allocate(shortfall, weights, spare)
    return target, {k: taken[k] + extra[k] for k in quotas}
