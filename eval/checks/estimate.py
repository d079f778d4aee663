"""`draftset check estimate`: expected speedup from accept length, draft cost and verify cost.

One speculation round costs one verify pass plus `steps` draft steps and yields `accept_length`
tokens; plain decoding yields one token per target step. In units of one target decode step:

    speedup = accept_length / (verify_cost + steps * draft_cost),  break-even AL = round cost.

Calibrating from a measured run (baseline tok/s, speculative tok/s at a known AL) gives the round
cost directly: cost = AL * baseline / observed. The field run (90 tok/s plain; EAGLE-3 82.3 tok/s at
AL 2.1 with 5 draft tokens, 74.9 tok/s at AL 2.2 with 16) gives 2.30 and 2.64: AL ≈ 2.5 only breaks even.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.errors import DraftsetError


@dataclass
class Estimate:
    accept_length: float
    round_cost: float

    @property
    def speedup(self) -> float:
        return self.accept_length / self.round_cost


def round_cost(steps: int, draft_cost: float, verify_cost: float) -> float:
    if steps < 1 or draft_cost < 0 or verify_cost <= 0:
        raise DraftsetError(
            f"invalid costs: steps={steps} draft_cost={draft_cost} verify_cost={verify_cost}",
            hint="steps ≥ 1; costs are fractions of one plain target decode step (verify ≈ 1-1.5)",
        )
    return verify_cost + steps * draft_cost


def calibrated_round_cost(baseline_tps: float, observed_tps: float, observed_accept_length: float) -> float:
    if min(baseline_tps, observed_tps, observed_accept_length) <= 0:
        raise DraftsetError(
            "calibration figures must be positive",
            hint="e.g. --baseline-tps 90 --observed-tps 82.3 --observed-accept-length 2.1",
        )
    return observed_accept_length * baseline_tps / observed_tps


def estimate(accept_lengths: list[float], cost: float) -> list[Estimate]:
    return [Estimate(al, cost) for al in accept_lengths]
