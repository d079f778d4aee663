"""Plan the mix for "N more samples in domain D": which datasets, how many rows, what it costs.

Samples the catalog already holds for the domain (approved adapters or ingested data) are counted
and their datasets are not proposed again. New samples are allocated by category weight, best score
first, with a per-dataset share cap (`quotas`); each line carries its quota (`est_samples`, what the mix
takes from it), rows, mode, tokens, regeneration hours at the configured throughput and the hidden-state
bytes capture will write.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from agents.configuration import FindConfig
from agents.forecast import REFERENCE, Cost, Point, fit, human_bytes, line
from agents.state import Candidate, Plan, PlanItem
from catalog import Catalog
from catalog.home import Home, flat_repo_name
from catalog.quota import allocate

FORECAST_STEPS = 3  # the serving default the forecast speaks for
FORECAST_AL = 3.0  # a clear speedup: the field run broke even near AL 2.5 (eval/checks/estimate.py)
UNPLANNABLE = {"no_license", "non_english", "non_text", "empty"}

HELD_SQL = """
SELECT repo_id, category, n_rows, est_yield FROM candidate_status
 WHERE status = 'ingested'
    OR repo_id IN (SELECT repo_id FROM adapters WHERE status = 'approved')
"""


def domain_categories(weights: dict[str, float]) -> set[str]:
    """Categories the domain favours (weight above the floor); all of them if none stands out."""
    floor = min(weights.values())
    favoured = {k for k, w in weights.items() if w > floor + 1e-9}
    return favoured or set(weights)


def _normalized_rows(home: Path, repo_id: str) -> int | None:
    folder = Home(home).normalized_root / flat_repo_name(repo_id)
    parts = sorted(folder.glob("part-*.parquet"))
    if not parts:
        return None
    return sum(pq.ParquetFile(p).metadata.num_rows for p in parts)


def holdings(catalog: Catalog, weights: dict[str, float]) -> dict[str, int]:
    """repo_id → samples already held toward this domain (ingested rows, else the estimate)."""
    if not catalog.path.exists():
        return {}
    wanted = domain_categories(weights)
    held: dict[str, int] = {}
    for row in catalog.query(HELD_SQL):
        if row["category"] not in wanted:
            continue
        ingested = _normalized_rows(catalog.home, row["repo_id"])
        held[row["repo_id"]] = ingested if ingested is not None else int((row["n_rows"] or 0) * (row["est_yield"] or 0))
    return held


def plannable(c: Candidate, held: dict[str, int], has_token: bool) -> bool:
    return (
        c.status == "relevant"
        and c.repo_id not in held
        and not (UNPLANNABLE & set(c.flags))
        and (has_token or not c.gated)
        and (c.n_rows or 0) > 0
        and c.est_yield > 0
    )


def quotas(chosen: list[Candidate], samples: int, weights: dict[str, float], cap: int) -> dict[str, int]:
    """repo_id → samples to take: the plan's quotas, which the mix takes as they are.

    Categories split `samples` by weight (what a category cannot fill goes to the others, by weight);
    inside a category the best-scored dataset is filled first, up to the share cap and its usable rows.
    `chosen` is ranked best first. Both steps are catalog.quota.allocate, the mix's allocation too."""
    # An unknown row count (None) gives nothing usable; plannable() already keeps such candidates out.
    usable = {c.repo_id: max(0, min(int((c.n_rows or 0) * c.est_yield), cap)) for c in chosen}
    present = {c.category for c in chosen}
    room = {k: sum(usable[c.repo_id] for c in chosen if c.category == k) for k in present}
    per_category = allocate(samples, {k: weights[k] for k in present}, room)
    taken: dict[str, int] = {}
    for category in sorted(present):
        members = [c.repo_id for c in chosen if c.category == category]
        rank = {repo: i for i, repo in enumerate(members)}
        taken |= allocate(per_category[category], {r: 1.0 for r in members}, usable, rank=rank)
    return {c.repo_id: taken[c.repo_id] for c in chosen if taken.get(c.repo_id)}


def plan_mix(
    plan_id: str,
    candidates: list[Candidate],
    held: dict[str, int],
    samples: int,
    weights: dict[str, float],
    config: FindConfig,
    has_token: bool,
    points: list[Point] | None = None,
    train_steps: Callable[[float], int | None] | None = None,
) -> Plan:
    """The plan for `samples` new samples. `train_steps(tokens)`: the optimizer steps the training recipe would take
    on that many tokens (agents/run.py FindEnv), so the forecast speaks for the run the data will get."""
    cap_ = config.capacity
    chosen = sorted((c for c in candidates if plannable(c, held, has_token)), key=lambda c: -c.score)
    taken = quotas(chosen, samples, weights, max(1, math.ceil(config.share_cap * samples)))
    items = []
    for c in chosen:
        n = taken.get(c.repo_id, 0)
        if not n:
            continue
        assert c.n_rows is not None  # a quota is at most its usable rows, so this candidate's count is known
        per_response = c.response_tokens if c.mode == "native" else cap_.regen_response_tokens
        prompt_tokens, response_tokens = round(n * c.prompt_tokens), round(n * per_response)
        items.append(
            PlanItem(
                repo_id=c.repo_id,
                category=c.category,
                mode=c.mode,
                rows_to_take=min(c.n_rows, math.ceil(n / c.est_yield)),
                est_samples=n,
                prompt_tokens=prompt_tokens,
                response_tokens=response_tokens,
                regen_hours=0.0 if c.mode == "native" else response_tokens / cap_.throughput_tok_s / 3600,
                hidden_state_bytes=(prompt_tokens + response_tokens) * cap_.hidden_state_bytes_per_token,
            )
        )
    planned = sum(i.est_samples for i in items)
    totals: dict[str, Any] = {
        "datasets": len(items),
        "samples_planned": planned,
        "shortfall": max(0, samples - planned),
        "rows_to_take": sum(i.rows_to_take for i in items),
        "prompt_tokens": sum(i.prompt_tokens for i in items),
        "response_tokens": sum(i.response_tokens for i in items),
        "regen_hours": round(sum(i.regen_hours for i in items), 3),
        "hidden_state_bytes": sum(i.hidden_state_bytes for i in items),
        "bytes_per_token": cap_.hidden_state_bytes_per_token,
        "throughput_tok_s": cap_.throughput_tok_s,
    }
    totals["forecast"] = forecast_line(points or [], samples + sum(held.values()), totals, train_steps)
    return Plan(
        plan_id=plan_id,
        samples_requested=samples,
        samples_existing=sum(held.values()),
        existing_repos=sorted(held),
        items=items,
        totals=totals,
    )


def forecast_line(
    points: list[Point],
    samples: int,
    totals: dict[str, Any],
    train_steps: Callable[[float], int | None] | None = None,
) -> str:
    """What the plan's data should buy, from measured points (agents/forecast.py), or why it cannot say: at the
    optimizer steps the recipe would train on all of it (`train_steps` of its tokens) when that is known."""
    steps = FORECAST_STEPS
    f, source = fit(points, steps), ""
    if f is None:
        f, source = fit(REFERENCE, steps), "; SmolLM2-135M reference, not this target: run `draftset check pilot`"
    planned = max(totals["samples_planned"], 1)
    cost = Cost(
        (totals["prompt_tokens"] + totals["response_tokens"]) / planned,
        totals["response_tokens"] / planned,
        totals["throughput_tok_s"],
        totals["bytes_per_token"],
    )
    assert f is not None  # the reference has two sample counts
    optimizer_steps = train_steps(samples * cost.tokens_per_sample) if train_steps is not None else None
    return line(f, samples, FORECAST_AL, cost, source, train_steps=optimizer_steps)


def headline(totals: dict[str, Any]) -> str:
    """The one line a user reads before starting anything: "this is 55 hours and 9.2 TB"."""
    return f"this is {totals['regen_hours']:.1f} hours and {human_bytes(totals['hidden_state_bytes'])}"
