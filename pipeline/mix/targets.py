"""What a mix aims for, read from a plan in the catalog: each source's quota, and N.

A plan (written by `draftset find`) gives each dataset a quota: `plan_items.est_samples`, the samples
find allocated to it (agents/planning.py, catalog/quota.py). The mix takes those quotas as they are;
it does not allocate again. A planned source that was never ingested keeps its quota, with nothing
available: its share is passed on like any other shortfall (`catalog.quota.take_quotas`). N defaults
to the quotas' sum (never more than the plan asked for). Without any plan, every ingested source is
used, split by category weight (equal unless given). A dataset held back by ingest (more rows failed a
per-record check than its spec tolerates: pipeline/ingest/tolerance.py) is never mixed; with a plan its
quota is passed on like a missing source's, and the mix names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.names import require_known
from pipeline.ingest.tolerance import held_back


@dataclass
class MixTargets:
    plan_id: str | None
    samples: int | None  # None: take everything available
    category_weights: dict[str, float]  # without a plan: category -> weight ({} = equal)
    source_category: dict[str, str]  # repo_id -> category ("" = use the rows' own); planned ones not ingested too
    source_quotas: dict[str, int]  # with a plan: repo_id -> quota (every planned source, ingested or not)
    missing: list[str] = field(default_factory=list)  # planned but never ingested
    unplanned: list[str] = field(default_factory=list)  # ingested but not in the plan: left out
    held_back: dict[str, str] = field(default_factory=dict)  # ingested, failed its bad-row threshold: why


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


def _ingested_categories(home: Path, repos: set[str]) -> set[str]:
    """The categories the ingested rows carry (ingest writes the adapter's category on every record)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    found: set[str] = set()
    for repo in repos:
        for shard in sorted(Home(home).normalized(repo).glob("part-*.parquet")):
            column = pq.read_table(shard, columns=["category"]).column("category")
            found.update(str(v) for v in pc.unique(column).to_pylist() if v is not None)
    return found


def load_targets(
    catalog: Catalog,
    home: Path,
    plan_id: str | None = None,
    samples: int | None = None,
    weights: dict[str, float] | None = None,
) -> MixTargets:
    """The plan's quotas (plan_id, else the newest plan); without a plan or with `weights`, category weights."""
    if weights and plan_id is not None:
        raise DraftsetError(
            f"a mix follows plan {plan_id!r} or category weights, not both", hint="drop --plan or --weight"
        )
    held = {repo: str(mark.get("error", "held back by ingest")) for repo, mark in held_back(home).items()}
    ingested = set(Home(home).normalized_repos()) - set(held)
    plan = None if weights else _plan_row(catalog, plan_id)
    if plan is None:
        if not ingested:
            raise DraftsetError(
                "nothing to mix: no dataset has been ingested"
                + (f" that passed its bad-row threshold (held back: {', '.join(sorted(held))})" if held else ""),
                hint="run `draftset ingest` after approving adapters; a held-back dataset needs its adapter fixed "
                "or its max_bad_fraction raised (the ingest error says which)",
            )
        if weights:  # checked before any stage runs: a typo would otherwise surface only after dedup
            known = _ingested_categories(home, ingested)
            for category in weights:
                require_known("category", category, known, where="--weight", hint="weigh the sources' categories")
        return MixTargets(None, samples, weights or {}, {r: "" for r in sorted(ingested)}, {}, held_back=held)
    items = catalog.query(
        "SELECT repo_id, category, est_samples FROM plan_items WHERE plan_id = ? ORDER BY repo_id",
        [plan["plan_id"]],
    )
    categories, quotas, missing = {}, {}, []
    for item in items:
        quotas[item["repo_id"]] = int(item["est_samples"] or 0)
        categories[item["repo_id"]] = item["category"]
        if item["repo_id"] not in ingested and item["repo_id"] not in held:
            missing.append(item["repo_id"])
    planned_held = {r: why for r, why in held.items() if r in categories}
    if len(missing) + len(planned_held) == len(categories):
        raise DraftsetError(
            f"no dataset of plan {plan['plan_id']} has been ingested ({len(missing)} planned"
            + (f", {len(planned_held)} held back by their bad-row threshold" if planned_held else "")
            + ")",
            hint=f"run `draftset ingest --plan {plan['plan_id']}`",
        )
    n = samples
    if n is None:
        n = sum(quotas.values())
        if plan.get("samples_requested"):
            n = min(n, int(plan["samples_requested"]))
    unplanned = sorted(ingested - set(categories))
    return MixTargets(plan["plan_id"], n, {}, categories, quotas, missing, unplanned, planned_held)
