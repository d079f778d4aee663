"""Chain speculative decoding replayed on teacher-forced rows: the accept length a decode would measure.

Training's step k at position t (pipeline/train/ttt.py) feeds exactly what a decoding round that starts
at t feeds its k-th proposal once proposals 1..k-1 were accepted: the true tokens x[t+1..t+k+1], the
committed step-0 keys up to t and the chain's own keys. So on rows that are the target's own greedy
output, a round starting at t accepts the leading run of steps that are right at t, and the next round
starts n+1 positions later. Walking the rows this way gives the decode's rounds without decoding.

Multiplying per-step accuracies (1 + Σ Π a_i) does not: every position counts once there, while a walk
starts a round after each rejection, so hard stretches (short rounds, many of them) weigh more. That
selection is why decoding's step-1 acceptance sits below teacher-forced step-1 accuracy with a faithful
harness (eval/bench/bench_real_target_notes.md has the figures).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

BOOTSTRAP = 1000
LEVEL = 0.95


def walk(hits: list[torch.Tensor], start: int, end: int, max_new: int | None) -> list[int]:
    """Accepted draft tokens per round over one row.

    hits[k][t]: step k at position t is right (and counted). The first round starts at `start`, the last
    prompt position (the prefill already gave x[start + 1]); `end` is the row's last index; a decode of
    `max_new` tokens stops there too."""
    steps = len(hits)
    table = torch.stack(hits).bool().tolist() if steps else []
    rounds: list[int] = []
    t, made = start, 1
    while t + 1 < end and (max_new is None or made < max_new):
        n = 0
        while n < steps and t + n + 2 <= end and table[n][t]:
            n += 1
        rounds.append(n)
        t, made = t + n + 1, made + n + 1
    return rounds


@dataclass
class Interval:
    value: float
    low: float
    high: float
    n_rounds: int
    n_tokens: int

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def accept_length_interval(rounds: list[int], seed: int = 0) -> Interval:
    """Accept length (tokens per round, bonus included) with a percentile bootstrap over drafting rounds.

    Rounds of one prompt are correlated, so this interval is a lower bound on the uncertainty over prompts."""
    a = np.asarray(rounds, dtype=np.float64) + 1.0
    if a.size == 0:
        return Interval(0.0, 0.0, 0.0, 0, 0)
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, a.size, size=(BOOTSTRAP, a.size))].mean(1)
    lo, hi = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Interval(float(a.mean()), float(lo), float(hi), int(a.size), int(a.sum()))


def prompt_interval(per_prompt: list[list[int]], seed: int = 0) -> Interval | None:
    """Accept length with a bootstrap over prompts (each prompt's rounds drawn together): the uncertainty of the
    figure as a claim about prompts of this kind, where `accept_length_interval` treats rounds as independent.

    Rounds of one prompt share its text (a list, code, a repetition loop), so prompts differ by more than their
    rounds' spread says: the 16-prompt sets of two runs of one target lay ~0.3 apart (eval/bench/
    real_target_stages_notes.md), outside the round intervals. Each resample's value is its rounds' tokens over
    its rounds, the same ratio as the point value. None with fewer than two prompts: nothing to resample."""
    groups = [np.asarray(r, dtype=np.float64) + 1.0 for r in per_prompt if len(r)]
    if len(groups) < 2:
        return None
    tokens = np.array([g.sum() for g in groups])
    rounds = np.array([g.size for g in groups], dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(BOOTSTRAP, len(groups)))
    means = tokens[picks].sum(1) / rounds[picks].sum(1)
    lo, hi = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Interval(float(tokens.sum() / rounds.sum()), float(lo), float(hi), int(rounds.sum()), int(tokens.sum()))


@dataclass
class Difference:
    value: float  # accept length of a minus b on the same prompts
    low: float
    high: float
    n_prompts: int

    def __str__(self) -> str:
        return f"{self.value:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def paired_difference(a: list[list[int]], b: list[list[int]], seed: int = 0) -> Difference | None:
    """Accept length of `a` minus `b`, two drafts (or recipes) decoding the same prompts in the same order, with a
    paired bootstrap over prompts: each resample draws prompt indices once and takes both drafts' rounds of them.

    Two drafts on the same prompts share the prompts' difficulty (a list is easy for both, a free-form answer
    hard), so the difference of their values is far tighter than either's interval over prompts: what tells a
    recipe lever from noise on 16 prompts. None below two prompts both decoded, or when the prompt lists differ."""
    if len(a) != len(b):
        return None
    both = [(np.asarray(x, np.float64) + 1.0, np.asarray(y, np.float64) + 1.0) for x, y in zip(a, b) if x and y]
    if len(both) < 2:
        return None
    tok = np.array([[x.sum(), y.sum()] for x, y in both])
    rnd = np.array([[x.size, y.size] for x, y in both], dtype=np.float64)
    picks = np.random.default_rng(seed).integers(0, len(both), size=(BOOTSTRAP, len(both)))
    diffs = tok[picks, 0].sum(1) / rnd[picks, 0].sum(1) - tok[picks, 1].sum(1) / rnd[picks, 1].sum(1)
    lo, hi = np.quantile(diffs, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    value = tok[:, 0].sum() / rnd[:, 0].sum() - tok[:, 1].sum() / rnd[:, 1].sum()
    return Difference(float(value), float(lo), float(hi), len(both))


def tokens_to_separate(a: Interval, b: Interval) -> int | None:
    """Tokens (per wiring) at which the two intervals would stop overlapping, at the same difference.

    Half-widths shrink as 1/sqrt(tokens); None when the values are equal (no sample size separates them)."""
    gap = abs(a.value - b.value)
    if gap == 0:
        return None
    width = (a.high - a.low) / 2 + (b.high - b.low) / 2
    tokens = max(a.n_tokens, b.n_tokens, 1)
    return int(np.ceil(tokens * (width / gap) ** 2))


def separation(configured: Interval, other: Interval) -> str:
    """'separated' or a line saying they are not, and what would separate them."""
    if not configured.overlaps(other):
        return "separated"
    need = tokens_to_separate(configured, other)
    more = f"~{need:,} tokens per wiring would separate them" if need else "equal: no sample size separates them"
    return f"not separated at this sample size ({configured.n_tokens:,} tokens); {more}"
