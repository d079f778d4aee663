"""What a mix aims for: category weights, per-source caps and N, read from a plan in the catalog.

A plan (written by `draftset find`) lists, per dataset, its category and how many rows to take.
Category weight = the plan's estimated samples in that category; a source's cap = what the plan
means to take from it. Without any plan, every ingested source is used with equal category weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home


@dataclass
class MixTargets:
    plan_id: str | None
    samples: int | None  # None: take everything available
    category_weights: dict[str, float]
    source_category: dict[str, str]  # repo_id -> category ("" = use the rows' own)
    source_caps: dict[str, int | None]  # repo_id -> most records to take (None = no cap)
    missing: list[str] = field(default_factory=list)  # planned but never ingested
    unplanned: list[str] = field(default_factory=list)  # ingested but not in the plan: left out


def _plan_row(catalog: Catalog, plan_id: str | None) -> dict | None:
    if not catalog.path.exists():
        if plan_id:
            raise DraftsetError(
                f"plan {plan_id!r} not found: there is no catalog yet",
                hint='run `draftset find "<domain>"` to make a plan',
            )
        return None
    if plan_id is None:
        rows = catalog.query("SELECT * FROM plans ORDER BY created_at DESC NULLS LAST, plan_id DESC LIMIT 1")
        return rows[0] if rows else None
    rows = catalog.query("SELECT * FROM plans WHERE plan_id = ?", [plan_id])
    if not rows:
        raise DraftsetError(
            f"plan {plan_id!r} not found in the catalog",
            hint='list plans with `draftset sql "SELECT plan_id, domain, created_at FROM plans"`',
        )
    return rows[0]


def load_targets(catalog: Catalog, home: Path, plan_id: str | None = None, samples: int | None = None) -> MixTargets:
    ingested = set(Home(home).normalized_repos())
    plan = _plan_row(catalog, plan_id)
    if plan is None:
        if not ingested:
            raise DraftsetError(
                "nothing to mix: no dataset has been ingested", hint="run `draftset ingest` after approving adapters"
            )
        return MixTargets(None, samples, {}, {r: "" for r in sorted(ingested)}, {r: None for r in sorted(ingested)})
    items = catalog.query(
        "SELECT repo_id, category, rows_to_take, est_samples FROM plan_items WHERE plan_id = ? ORDER BY repo_id",
        [plan["plan_id"]],
    )
    weights: dict[str, float] = {}
    categories, caps, missing = {}, {}, []
    for item in items:
        if item["repo_id"] not in ingested:
            missing.append(item["repo_id"])
            continue
        est = item["est_samples"] or item["rows_to_take"] or 0
        weights[item["category"]] = weights.get(item["category"], 0.0) + float(est)
        categories[item["repo_id"]] = item["category"]
        # A row can give several records (one per turn), so the cap is the larger of the two.
        caps[item["repo_id"]] = max(item["rows_to_take"] or 0, item["est_samples"] or 0) or None
    if not categories:
        raise DraftsetError(
            f"no dataset of plan {plan['plan_id']} has been ingested ({len(missing)} planned)",
            hint=f"run `draftset ingest --plan {plan['plan_id']}`",
        )
    n = samples if samples is not None else plan.get("samples_requested")
    return MixTargets(plan["plan_id"], n, weights, categories, caps, missing, sorted(ingested - set(categories)))
