"""The JSON shape of a check's figures: one wiring's accept length, interval and step figures, as `check draft
--json`, `check accept-length --json` and the service's check job give them (one home, so they cannot drift)."""

from __future__ import annotations

from typing import Any


def interval_json(i: object) -> dict[str, float] | None:
    """An accept-length interval (eval.specdecode.replay.Interval) as numbers, for --json."""
    if i is None:
        return None
    return {k: getattr(i, k) for k in ("value", "low", "high", "n_rounds", "n_tokens")}


def wiring_record(w: Any) -> dict[str, Any]:
    """One wiring's figures (eval.checks.draft_check.WiringResult) as --json and the service's check job give them."""
    return {
        "wiring": w.name,
        "hf_taps": w.hf_ids,
        "step_accuracy_fraction": list(w.step_accuracy),
        "accept_length": w.accept_length,
        "accept_length_interval": interval_json(w.interval),
        "step_acceptance_fraction": list(w.step_acceptance),
        "independent_accept_length": w.independent_al,
        "accept_length_prompt_interval": interval_json(w.prompt_interval),
        # the replay cut at fewer steps (check draft), and each row's rounds: what a paired comparison of two
        # drafts on the same rows needs (eval.specdecode.replay.paired_difference)
        "accept_length_by_steps": {str(k): interval_json(v) for k, v in sorted(w.by_steps.items())},
        "rounds_per_prompt": w.per_prompt,
    }
