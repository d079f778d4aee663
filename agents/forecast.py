"""What more data buys: accept length against training samples, fitted from measured points.

Model: AL = a + b·ln(samples), weighted least squares with each point's standard error (from its
bootstrap interval); with three or more points the residual scatter widens the band when it exceeds
the points' own errors. Chain accept length lies in [1, steps + 1], so predictions are clipped there
and say so at the ceiling. Predictions outside the measured range of sample counts say they
extrapolate: a log-linear fit bends nowhere, while real curves saturate, so an extrapolated "samples
needed" is a lower bound.

Points come from `draft_evals` (measured by `check accept-length`, with the draft's training sample
count), e.g. from `draftset check pilot` on nested subsets of one mix. Pure arithmetic here (numpy), so
find's plan (agents) and `check draft` (eval) share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.filesize import decimal

from catalog.errors import DraftsetError

if TYPE_CHECKING:
    from catalog import Catalog

Z = 1.96  # 95% bands
DEFAULT_SE = 0.05  # a point measured without an interval: ~16 prompts x 96 tokens at AL 2-3


@dataclass(frozen=True)
class Point:
    samples: int
    accept_length: float
    se: float = DEFAULT_SE
    steps: int = 3


# Measured on one H200 (eval/bench/bench_real_target_curve_notes.md, 2026-12-02; the points of
# bench_real_target_curve.json): SmolLM2-135M-Instruct, greedy answers by the target, nested subsets,
# `train --online` 4 epochs, the same 16 held-out prompts x 96 tokens; se from each bootstrap interval.
# Another target's curve differs; shown only when a user has no points of their own, and labelled so.
REFERENCE = [
    Point(3000, 1.683, 0.034, steps=3),
    Point(9000, 1.989, 0.042, steps=3),
    Point(27000, 2.317, 0.052, steps=3),
    Point(3000, 1.716, 0.038, steps=5),
    Point(9000, 2.148, 0.060, steps=5),
    Point(27000, 2.594, 0.078, steps=5),
]


@dataclass
class Fit:
    a: float
    b: float
    cov: np.ndarray  # 2x2 covariance of (a, b)
    steps: int
    lo: int  # measured range of sample counts
    hi: int
    n_points: int

    def predict(self, samples: float) -> tuple[float, float]:
        """(expected accept length, 95% half-width) at `samples`, within [1, steps + 1]: a round yields at
        least the target's own token and at most every proposal plus it."""
        x = np.array([1.0, math.log(samples)])
        mean = float(x @ np.array([self.a, self.b]))
        half = Z * math.sqrt(max(float(x @ self.cov @ x), 0.0))
        return min(max(mean, 1.0), self.steps + 1.0), half

    @property
    def gains(self) -> bool:
        """More data raises accept length beyond the points' noise (the slope's band excludes zero)."""
        return self.b - Z * math.sqrt(max(float(self.cov[1, 1]), 0.0)) > 0

    def extrapolating(self, samples: float) -> bool:
        return not self.lo <= samples <= self.hi

    def samples_for(self, accept_length: float) -> tuple[int, int, int] | None:
        """(central, optimistic, pessimistic) sample counts for `accept_length`; None if unreachable here."""
        if not self.gains or accept_length >= self.steps + 1:
            return None

        def solve(side: int) -> int:
            lo_x, hi_x = 0.0, math.log(1e13)
            for _ in range(80):  # bisection on ln(samples): the band's edge is monotone where b > 0
                mid = (lo_x + hi_x) / 2
                mean, half = self.predict(math.exp(mid))
                if mean + side * half < accept_length:
                    lo_x = mid
                else:
                    hi_x = mid
            return int(math.exp(hi_x))

        central = int(math.exp((accept_length - self.a) / self.b))
        return central, solve(+1), solve(-1)


def fit(points: list[Point], steps: int) -> Fit | None:
    """The log-linear fit over points at `steps`; None without two distinct sample counts."""
    pts = [p for p in points if p.steps == steps and p.samples > 0]
    if len({p.samples for p in pts}) < 2:
        return None
    x = np.array([[1.0, math.log(p.samples)] for p in pts])
    y = np.array([p.accept_length for p in pts])
    w = np.array([1.0 / max(p.se, 1e-3) ** 2 for p in pts])
    cov = np.linalg.inv(x.T @ (w[:, None] * x))
    a, b = cov @ x.T @ (w * y)
    if len(pts) > 2:  # scatter beyond the points' own errors widens the band
        chi2 = float((w * (y - x @ np.array([a, b])) ** 2).sum()) / (len(pts) - 2)
        cov = cov * max(chi2, 1.0)
    return Fit(float(a), float(b), cov, steps, min(p.samples for p in pts), max(p.samples for p in pts), len(pts))


@dataclass(frozen=True)
class Cost:
    """What one sample costs: its tokens, how fast regeneration makes answers, bytes of hidden states."""

    tokens_per_sample: float
    response_tokens_per_sample: float
    throughput_tok_s: float
    hidden_bytes_per_token: int

    def hours(self, samples: int) -> float:
        return samples * self.response_tokens_per_sample / self.throughput_tok_s / 3600

    def terabytes(self, samples: int) -> float:
        return samples * self.tokens_per_sample * self.hidden_bytes_per_token / 1e12


def human_bytes(n: float) -> str:
    """Bytes in SI units, as disks are sold: 67.2 GB below a TB, 9.2 TB above (9.2 TB = 9.2e12 bytes). The one
    byte formatter: the forecast, find's tables and the service's pages all print through it."""
    return decimal(int(n))


def line(f: Fit, samples: int, target_al: float, cost: Cost | None = None, source: str = "") -> str:
    """The forecast sentence a user decides on."""
    mean, half = f.predict(samples)
    where = (
        f"extrapolating: measured {f.lo:,}-{f.hi:,} samples"
        if f.extrapolating(samples)
        else f"within the measured {f.lo:,}-{f.hi:,}"
    )
    ceiling = " (the chain's ceiling)" if mean >= f.steps + 1 else ""
    text = f"with {samples:,} samples expect AL {mean:.2f} ± {half:.2f} at {f.steps} steps{ceiling} ({where}{source})"
    need = f.samples_for(target_al)
    if need is None:
        reason = (
            "above the chain's ceiling"
            if target_al >= f.steps + 1
            else "these points show no gain from data beyond their noise"
        )
        return f"{text}; AL {target_al:g} is not reachable on this fit ({reason})"
    central, optimistic, pessimistic = need
    text += f"; for AL {target_al:g} you need ~{central:,} samples ({optimistic:,}-{pessimistic:,})"
    if cost is not None:
        text += (
            f" (regeneration {cost.hours(central):,.1f} h, hidden states {human_bytes(cost.terabytes(central) * 1e12)} "
            "offline or 0 online)"
        )
    if f.extrapolating(central):
        text += ", extrapolated: a lower bound once the curve saturates"
    return text


def measured_points(catalog: Catalog | None) -> list[Point]:
    """Configured-wiring accept lengths measured by decoding whose draft's training sample count is known."""
    if catalog is None:
        return []
    try:
        rows = catalog.query(
            "SELECT steps, accept_length, al_low, al_high, train_samples FROM draft_evals "
            "WHERE method = 'specdecode' AND wiring = 'configured' AND train_samples IS NOT NULL"
        )
    except DraftsetError:  # no catalog file yet: nothing was measured
        return []
    points = []
    for r in rows:
        low, high = r.get("al_low"), r.get("al_high")
        se = (high - low) / (2 * Z) if low is not None and high is not None and high > low else DEFAULT_SE
        points.append(Point(int(r["train_samples"]), float(r["accept_length"]), se, int(r["steps"])))
    return points
