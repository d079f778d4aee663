"""The plausible miswirings of a draft's tap list, measured beside the configured wiring.

Both the decode (eval/specdecode/evaluate.py) and the teacher-forced check (eval/checks/draft_check.py)
measure the same list, so it lives here, below both: eval/checks reads eval/specdecode, never the reverse.
"""

from __future__ import annotations


def wrong_wirings(ids: list[int], n_layers: int) -> list[tuple[str, list[int]]]:
    """Plausible miswirings of `ids` (HF indices; n = last block's pre-norm output)."""
    out = [
        ("shifted +1", [j + 1 for j in ids]),
        ("shifted -1", [j - 1 for j in ids]),
        ("order swapped", ids[::-1]),
        ("last layer instead of first", [n_layers] + ids[1:]),
    ]
    out.append(
        ("embedding missing", ids[1:] + [n_layers]) if ids[0] == 0 else ("embedding instead of last", [0] + ids[:-1])
    )
    return [(name, w) for name, w in out if all(0 <= j <= n_layers for j in w) and w != ids]
