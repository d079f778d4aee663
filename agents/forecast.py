"""What more data buys: accept length against training samples (and the optimizer steps the draft trained for),
fitted from measured points.

Model: AL = a + b·ln(samples) + c·ln(train_steps) when the points' ln(samples) and ln(train_steps) are not
collinear (rank 3 and a condition number below COLLINEAR_COND of the centred design); otherwise
AL = a + b·ln(samples), and the fit says why (`Fit.fallback`). The recipe matters: on 27K rows of the same
target, 4,368 steps at 8,192 tokens a batch measured AL 2.564 where 724 steps at 32,768 measured 2.387
(issue 29), about what tripling the data buys; a sample-only fit cannot tell them apart. Another dataset of
the same target (24K rows through the stages, 3,782 steps) measured 2.260, ~0.3 below that point: points of
named datasets get one intercept each, the slopes are fitted within datasets, and a prediction (for a dataset not
measured) carries the intercepts' spread (eval/bench/recipe_forecast_notes.md). Weighted least
squares with each point's standard error (from its
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    steps: int = 3  # draft tokens per round the accept length was measured at
    train_steps: int | None = None  # optimizer steps the draft was trained for (None: not recorded)
    batch_tokens: int | None = None  # tokens per optimizer step (kept for the record; steps carry the fit)
    dataset: str | None = None  # which dataset and held-out prompt set it was measured on (None: one, unnamed)


# The datasets the reference points were measured on: each its own Magpie prompts by the target and its own 16
# held-out prompts. The two lie ~0.29 apart at equal samples and steps, which no recipe setting explains.
CURVE = "bench_real_target_curve"
STAGES = "real_target_stages"

# Measured on one H200 (eval/bench/bench_real_target_curve_notes.md, 2026-12-02; the points of
# bench_real_target_curve.json): SmolLM2-135M-Instruct, greedy answers by the target, nested subsets,
# `train --online` 4 epochs at 32,768 tokens a batch, lr 2e-3 (~220 tokens a row: ~80, 241, 724 optimizer
# steps), the same 16 held-out prompts x 96 tokens; se from each bootstrap interval. The last four: issue 29's
# rerun on a fresh H200 (same rows and prompts): the same recipe, and 6 epochs at 8,192 tokens, lr 1e-3.
# Another target's curve differs; shown only when a user has no points of their own, and labelled so.
CURVE_2026_12_02 = [  # bench_real_target_curve.json, point for point (tests/eval/bench holds them equal)
    Point(3000, 1.683, 0.034, steps=3, train_steps=80, batch_tokens=32768, dataset=CURVE),
    Point(9000, 1.989, 0.042, steps=3, train_steps=241, batch_tokens=32768, dataset=CURVE),
    Point(27000, 2.317, 0.052, steps=3, train_steps=724, batch_tokens=32768, dataset=CURVE),
    Point(3000, 1.716, 0.038, steps=5, train_steps=80, batch_tokens=32768, dataset=CURVE),
    Point(9000, 2.148, 0.060, steps=5, train_steps=241, batch_tokens=32768, dataset=CURVE),
    Point(27000, 2.594, 0.078, steps=5, train_steps=724, batch_tokens=32768, dataset=CURVE),
]
RECIPE_RERUN_ISSUE_29 = [  # a fresh H200, the same 27K rows and prompts: two recipes
    Point(27000, 2.387, 0.050, steps=3, train_steps=724, batch_tokens=32768, dataset=CURVE),  # [2.291, 2.487]
    # (no interval kept for this one: the 2.594's se)
    Point(27000, 2.653, 0.078, steps=5, train_steps=724, batch_tokens=32768, dataset=CURVE),
    Point(27000, 2.564, 0.051, steps=3, train_steps=4368, batch_tokens=8192, dataset=CURVE),  # [2.465, 2.667]
    Point(27000, 2.926, 0.079, steps=5, train_steps=4368, batch_tokens=8192, dataset=CURVE),  # [2.771, 3.081]
]
# Through draftset's own stages (eval/bench/real_target_stages_notes.md, 2026-12-03's second session): the target's
# Magpie prompts on a local Hub, ingest, mix, regenerate by serve-dev, build, `train --online` with the small recipe
# row (8,192 tokens, lr 1e-3 constant after 200 warm-up steps, TTT 5, EAGLE-3.1), stopped by the device's budget at
# 3,782 steps; `check accept-length` on 16 held-out prompts of that build (another prompt set than the points above).
# The fit of the points above predicted 2.525 +- 0.099 and 2.873 +- 0.153 here: another dataset of the same target
# lies ~0.3 off, outside those bands, so it is kept in the reference as a second dataset: its own intercept, and
# the two intercepts' spread in the band of a prediction for a dataset not measured yet.
STAGES_RUN_ISSUE_29 = [
    Point(23963, 2.260, 0.052, steps=3, train_steps=3782, batch_tokens=8192, dataset=STAGES),  # [2.157, 2.359]
    Point(23963, 2.559, 0.072, steps=5, train_steps=3782, batch_tokens=8192, dataset=STAGES),  # [2.410, 2.691]
    # 2026-12-03's third session: 63,813 rows of the same kind (64,000 prompts), the same recipe to 3,800 steps
    # (eval/bench/real_target_data64k.json). The pooled fit of the points above predicted 2.651 +- 0.172 here:
    # the miss that made the fit give each dataset its own intercept.
    Point(63813, 2.390, 0.052, steps=3, train_steps=3800, batch_tokens=8192, dataset=STAGES),  # [2.285, 2.489]
    Point(63813, 2.681, 0.077, steps=5, train_steps=3800, batch_tokens=8192, dataset=STAGES),  # [2.537, 2.837]
]
REFERENCE = CURVE_2026_12_02 + RECIPE_RERUN_ISSUE_29 + STAGES_RUN_ISSUE_29
# The most samples `samples_for` searches: a band edge that has not reached the goal there never does (a
# pessimistic count of this size means "out of reach", and the sentence says so instead of printing it).
SAMPLES_SEARCHED = 10**13
COLLINEAR_COND = 1e3  # of the centred, column-normalised design: above it steps and samples cannot be told apart


@dataclass
class Fit:
    a: float
    b: float
    cov: np.ndarray  # covariance of (a, b) or, recipe-aware, of (a, b, c)
    steps: int
    lo: int  # measured range of sample counts
    hi: int
    n_points: int
    c: float = 0.0  # the ln(train_steps) coefficient (0 when the fit could not separate it)
    typical_train_steps: float | None = None  # geometric mean of the points' steps: the one a prediction assumes
    fallback: str | None = None  # why the fit is samples-only, when the points carried steps
    datasets: int = 1  # datasets the points came from: more than one, and `a` is their mean intercept
    between_datasets: float = 0.0  # the spread (sd) of their intercepts, inside `cov`'s variance of `a`

    @property
    def recipe_aware(self) -> bool:
        return self.cov.shape == (3, 3)

    def predict(self, samples: float, train_steps: float | None = None) -> tuple[float, float]:
        """(expected accept length, 95% half-width) at `samples` (trained for `train_steps`; None: the points'
        typical steps), within [1, steps + 1]: a round yields at least the target's own token and at most
        every proposal plus it."""
        x = [1.0, math.log(samples)]
        if self.recipe_aware:
            assert self.typical_train_steps is not None  # set with the third coefficient
            x.append(math.log(train_steps or self.typical_train_steps))
        v = np.array(x)
        coef = np.array([self.a, self.b, self.c][: len(x)])
        mean = float(v @ coef)
        half = Z * math.sqrt(max(float(v @ self.cov @ v), 0.0))
        return min(max(mean, 1.0), self.steps + 1.0), half

    @property
    def gains(self) -> bool:
        """More data raises accept length beyond the points' noise (the slope's band excludes zero)."""
        return self.b - Z * math.sqrt(max(float(self.cov[1, 1]), 0.0)) > 0

    def extrapolating(self, samples: float) -> bool:
        return not self.lo <= samples <= self.hi

    def samples_for(self, accept_length: float, train_steps: float | None = None) -> tuple[int, int, int] | None:
        """(central, optimistic, pessimistic) sample counts for `accept_length` (trained for `train_steps`, held
        fixed as samples grow; None: the points' typical steps); None if unreachable here."""
        if not self.gains or accept_length >= self.steps + 1:
            return None

        def solve(side: int) -> int:
            top = math.log(SAMPLES_SEARCHED)
            lo_x, hi_x = 0.0, top
            for _ in range(80):  # bisection on ln(samples): the band's edge is monotone where b > 0
                mid = (lo_x + hi_x) / 2
                mean, half = self.predict(math.exp(mid), train_steps)
                if mean + side * half < accept_length:
                    lo_x = mid
                else:
                    hi_x = mid
            return SAMPLES_SEARCHED if hi_x == top else int(math.exp(hi_x))  # never reached: the ceiling itself

        at = train_steps or self.typical_train_steps
        offset = self.c * math.log(at) if self.recipe_aware and at else 0.0
        central = int(math.exp((accept_length - self.a - offset) / self.b))
        return central, solve(+1), solve(-1)


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least squares: (coefficients, covariance), the covariance widened by scatter beyond the
    points' own errors when there are degrees of freedom left."""
    cov = np.linalg.inv(x.T @ (w[:, None] * x))
    coef = cov @ x.T @ (w * y)
    dof = len(y) - x.shape[1]
    if dof > 0:
        chi2 = float((w * (y - x @ coef) ** 2).sum()) / dof
        cov = cov * max(chi2, 1.0)
    return coef, cov


def collinearity(log_samples: np.ndarray, log_steps: np.ndarray) -> str | None:
    """Why ln(samples) and ln(train_steps) cannot be fitted apart, or None when they can."""
    centred = np.column_stack([log_samples - log_samples.mean(), log_steps - log_steps.mean()])
    norms = np.linalg.norm(centred, axis=0)
    if len(log_samples) < 4 or (norms < 1e-9).any():
        return f"{len(log_samples)} points, {len(set(log_steps.round(9)))} step counts: too few to fit steps apart"
    design = np.column_stack([np.ones(len(log_samples)) / math.sqrt(len(log_samples)), centred / norms])
    if np.linalg.matrix_rank(design) < 3:
        return "optimizer steps grow in proportion to samples in every point (one recipe): collinear"
    cond = float(np.linalg.cond(design))
    if cond > COLLINEAR_COND:
        return f"steps and samples nearly collinear (condition number {cond:.0f} > {COLLINEAR_COND:g})"
    return None


def fit(points: list[Point], steps: int) -> Fit | None:
    """The fit over points at `steps`: recipe-aware when the points carry optimizer steps that vary apart
    from their sample counts, else log-linear in samples; None without two distinct sample counts.

    Points of several named datasets get one intercept each: the slopes are then fitted within datasets (a
    dataset that lies lower everywhere no longer bends them), and a prediction is for a dataset not among
    them: the mean intercept, its variance widened by the intercepts' spread (their sample variance, the
    points' own error left in: wider, not narrower, when the datasets are few)."""
    pts = [p for p in points if p.steps == steps and p.samples > 0]
    if len({p.samples for p in pts}) < 2:
        return None
    names = sorted({p.dataset for p in pts if p.dataset is not None})
    varied = any(len({p.samples for p in pts if p.dataset == n}) > 1 for n in names)  # a slope within one
    groups = names if len(names) > 1 and varied and all(p.dataset for p in pts) else [None]
    member = np.array([[1.0 if p.dataset == g or g is None else 0.0 for g in groups] for p in pts])
    y = np.array([p.accept_length for p in pts])
    w = np.array([1.0 / max(p.se, 1e-3) ** 2 for p in pts])
    ls = np.array([math.log(p.samples) for p in pts])
    lo, hi = min(p.samples for p in pts), max(p.samples for p in pts)
    within = member @ np.linalg.pinv(member)  # each point's dataset mean, subtracted for the collinearity test
    fallback = None
    if all(p.train_steps for p in pts):
        lt = np.array([math.log(p.train_steps or 1) for p in pts])
        fallback = collinearity(ls - within @ ls + ls.mean(), lt - within @ lt + lt.mean())
        if fallback is None:
            coef, cov = _wls(np.column_stack([member, ls, lt]), y, w)
            a, cov, spread = _mean_intercept(coef, cov, len(groups))
            typical = float(math.exp(lt.mean()))
            return Fit(a, float(coef[-2]), cov, steps, lo, hi, len(pts), float(coef[-1]), typical,
                       datasets=len(groups), between_datasets=spread)  # fmt: skip
    elif any(p.train_steps for p in pts):
        fallback = "some points have no recorded optimizer steps"
    coef, cov = _wls(np.column_stack([member, ls]), y, w)
    a, cov, spread = _mean_intercept(coef, cov, len(groups))
    return Fit(a, float(coef[-1]), cov, steps, lo, hi, len(pts), fallback=fallback, datasets=len(groups),
               between_datasets=spread)  # fmt: skip


def _mean_intercept(coef: np.ndarray, cov: np.ndarray, k: int) -> tuple[float, np.ndarray, float]:
    """(a, the covariance of (a, slopes...), the intercepts' sd) from a fit with k per-dataset intercepts
    first: a is their mean, and a new dataset's intercept varies around it by their spread."""
    n = len(coef)
    lift = np.zeros((n - k + 1, n))
    lift[0, :k] = 1.0 / k
    lift[1:, k:] = np.eye(n - k)
    out = lift @ cov @ lift.T
    spread = float(np.std(coef[:k], ddof=1)) if k > 1 else 0.0
    out[0, 0] += spread**2
    return float(coef[:k].mean()), out, spread


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


def line(
    f: Fit,
    samples: int,
    target_al: float,
    cost: Cost | None = None,
    source: str = "",
    train_steps: int | None = None,
) -> str:
    """The forecast sentence a user decides on. `train_steps`: the optimizer steps the run will train (its recipe's,
    pipeline/train/recipes.py), when the caller knows them; a recipe-aware fit predicts at them, and the sentence
    says which steps it assumed (these, or the points' typical ones)."""
    mean, half = f.predict(samples, train_steps)
    where = (
        f"extrapolating: measured {f.lo:,}-{f.hi:,} samples"
        if f.extrapolating(samples)
        else f"within the measured {f.lo:,}-{f.hi:,}"
    )
    if f.recipe_aware and train_steps:
        where += f"; at this run's {train_steps:,} optimizer steps, AL {f.c:+.3f} per e-fold of steps"
    elif f.recipe_aware and f.typical_train_steps:
        where += (
            f"; at ~{f.typical_train_steps:,.0f} optimizer steps (the points' typical: this run's steps are not known), "
            f"AL {f.c:+.3f} per e-fold of steps"
        )
    elif f.fallback:
        where += f"; samples only: {f.fallback}"
    if f.datasets > 1:
        where += f"; the band holds the spread between {f.datasets} datasets (sd {f.between_datasets:.2f})"
    ceiling = " (the chain's ceiling)" if mean >= f.steps + 1 else ""
    text = f"with {samples:,} samples expect AL {mean:.2f} ± {half:.2f} at {f.steps} steps{ceiling} ({where}{source})"
    need = f.samples_for(target_al, train_steps)
    if need is None:
        reason = (
            "above the chain's ceiling"
            if target_al >= f.steps + 1
            else "these points show no gain from data beyond their noise"
        )
        return f"{text}; AL {target_al:g} is not reachable on this fit ({reason})"
    central, optimistic, pessimistic = need
    span = (
        f"{optimistic:,}-{pessimistic:,}"
        if pessimistic < SAMPLES_SEARCHED
        else f"at least {optimistic:,}; the band's low edge never reaches it"
    )
    text += f"; for AL {target_al:g} you need ~{central:,} samples ({span})"
    if cost is not None:
        text += (
            f" (regeneration {cost.hours(central):,.1f} h, hidden states {human_bytes(cost.terabytes(central) * 1e12)} "
            "offline or 0 online)"
        )
    if f.extrapolating(central):
        text += ", extrapolated: a lower bound once the curve saturates"
    return text


def measured_points(catalog: Catalog | None, target: str | Path | None = None) -> list[Point]:
    """Configured-wiring accept lengths measured by decoding whose draft's training sample count is known: of
    `target` (a model dir) when given, else of every target, each point named by its target (several targets:
    an intercept each, and their spread in the band). One home may hold pilots of a toy and of a real target; a
    draft's forecast from another target's points would say nothing about it."""
    if catalog is None:
        return []
    where = "method = 'specdecode' AND wiring = 'configured' AND train_samples IS NOT NULL"
    params: list[Any] = []
    if target is not None:  # draft_evals keeps the resolved dir (eval/specdecode/evaluate.py)
        where += " AND target = ?"
        params.append(str(Path(target).resolve()))
    try:
        rows = catalog.query(
            "SELECT target, steps, accept_length, al_low, al_high, train_samples, train_steps, train_batch_tokens "
            f"FROM draft_evals WHERE {where}",
            params,
        )
    except DraftsetError:  # no catalog file yet: nothing was measured
        return []
    points = []
    for r in rows:
        low, high = r.get("al_low"), r.get("al_high")
        se = (high - low) / (2 * Z) if low is not None and high is not None and high > low else DEFAULT_SE
        train_steps, batch = r.get("train_steps"), r.get("train_batch_tokens")
        points.append(
            Point(
                int(r["train_samples"]),
                float(r["accept_length"]),
                se,
                int(r["steps"]),
                int(train_steps) if train_steps is not None else None,
                int(batch) if batch is not None else None,
                dataset=r.get("target"),
            )
        )
    return points
