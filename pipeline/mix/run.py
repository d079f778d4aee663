"""`draftset mix NAME`: dedup the plan's sources, then take each source's quota from the plan (what a
source cannot give after dedup is passed on to the others: catalog.quota.take_quotas), deterministically
under a seed, into data/mix/NAME/ with a manifest of quota, taken and shortfall per source. Without a
plan, N is split by category weight over every ingested source.

The mix is built in a hidden staging folder and renamed into place, so data/mix/NAME is always
either the previous complete mix or the new complete one. Re-running with the same config is a no-op
(counted as skipped); a different config needs --overwrite.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.progress import Progress

from catalog import Catalog
from catalog.errors import DraftsetError, StageFailed
from catalog.home import Home
from catalog.names import require_known
from catalog.quota import allocate, take_quotas
from catalog.shards import read_table, shard_paths
from pipeline.dedup.run import DedupConfig, run_dedup
from pipeline.mix.config import MixConfig
from pipeline.mix.copy import CopyChosen, write_chosen
from pipeline.mix.targets import MixTargets, load_targets
from pipeline.parallel import Executor, run_tasks, summed
from pipeline.stage import Stage, StageRun, field_default
from pipeline.targets.lengths import TokenCounter


@dataclass
class MixResult:
    name: str
    path: Path
    manifest: dict[str, Any]
    reused: bool


def _seeded_key(seed: int, record_id: str) -> str:
    # Order within a source = hash of (seed, id): stable across runs and machines, unlike random().
    return hashlib.sha256(f"{seed}:{record_id}".encode()).hexdigest()


def select(config: MixConfig, rows: list[dict[str, Any]]) -> tuple[set[str], dict[str, Any]]:
    """Pick record ids from deduplicated candidate rows (id, repo_id, category); return ids + plan."""
    by_source: dict[str, list[str]] = defaultdict(list)
    category_of: dict[str, str] = {}
    for row in rows:
        by_source[row["repo_id"]].append(row["id"])
        category_of.setdefault(row["repo_id"], config.source_category.get(row["repo_id"]) or row["category"])
    for s in config.source_quotas:  # planned sources with no row left still hold a quota
        category_of.setdefault(s, config.source_category.get(s) or "")
    available = {s: len(by_source.get(s, [])) for s in category_of}
    for cat in config.category_weights:  # a typo would weigh nothing and give its category 0 records
        require_known(
            "category", cat, set(category_of.values()), where="--weight", hint="weigh the sources' categories"
        )
    if config.plan_id is not None:
        total = config.samples if config.samples is not None else sum(config.source_quotas.values())
        target, taken = take_quotas(config.source_quotas, available, total)
        weight = {s: float(q) for s, q in config.source_quotas.items()}
    else:
        total = config.samples if config.samples is not None else sum(available.values())
        target = taken = _by_category_weight(config, category_of, available, total)
        weight = {
            s: config.category_weights.get(c, 0.0) if config.category_weights else 1.0 for s, c in category_of.items()
        }
    chosen: set[str] = set()
    report: dict[str, Any] = {"categories": {}, "sources": {}}
    for s in sorted(category_of):
        n = taken.get(s, 0)
        chosen.update(sorted(by_source.get(s, []), key=lambda i: _seeded_key(config.seed, i))[:n])
        report["sources"][s] = {
            "category": category_of[s],
            "candidates": available[s],
            "quota": config.source_quotas.get(s),
            "target": target.get(s, 0),
            "selected": n,
            "shortfall": max(0, target.get(s, 0) - n),
        }
    for cat in sorted(set(category_of.values())):
        members = [s for s in category_of if category_of[s] == cat]
        report["categories"][cat] = {
            "weight": sum(weight.get(s, 0.0) for s in members)
            if config.plan_id is not None
            else weight.get(members[0], 0.0),
            "room": sum(available[s] for s in members),
            "target": sum(target.get(s, 0) for s in members),
            "selected": sum(taken.get(s, 0) for s in members),
        }
    report["samples_target"] = total
    report["quota_shortfall"] = sum(v["shortfall"] for v in report["sources"].values())
    report["redistributed"] = sum(max(0, v["selected"] - v["target"]) for v in report["sources"].values())
    return chosen, report


def _by_category_weight(
    config: MixConfig, category_of: dict[str, str], available: dict[str, int], total: int
) -> dict[str, int]:
    """Without a plan: N split over categories by weight, then over a category's sources by their rows."""
    sources_in: dict[str, list[str]] = defaultdict(list)
    for s in sorted(category_of):
        sources_in[category_of[s]].append(s)
    weights = {c: config.category_weights.get(c, 0.0) if config.category_weights else 1.0 for c in sources_in}
    per_cat = allocate(total, weights, {c: sum(available[s] for s in ss) for c, ss in sources_in.items()})
    taken: dict[str, int] = {}
    for cat, srcs in sources_in.items():
        taken |= allocate(per_cat[cat], {s: float(available[s]) for s in srcs}, available)
    return taken


class MixStage(Stage[MixConfig]):
    """All or nothing: built in a staging folder and swapped into place; an identical re-run reuses it."""

    name = "mix"
    config_model = MixConfig
    staged = True
    fresh_flag = "--overwrite"

    def __init__(
        self,
        config: MixConfig,
        out_dir: Path,
        catalog: Catalog,
        *,
        home: Path,
        counter: TokenCounter,
        targets: MixTargets,
        overwrite: bool = False,
        progress: Progress | None = None,
        workers: int = 1,
        executor: Executor = "local",
    ):
        super().__init__(config, out_dir, catalog, fresh=overwrite)
        self.home, self.counter, self.targets, self.progress = Path(home), counter, targets, progress
        self.workers, self.executor = workers, executor
        # Planned sources never ingested, or held back by ingest's bad-row threshold, keep their quota (passed
        # on as a shortfall) but have no rows to read.
        self.repos = sorted(set(config.source_category) - set(targets.missing) - set(targets.held_back))
        self.mix_catalog = catalog  # typed: the base keeps `catalog` optional (GPU stages run without one)

    def is_same_output(self, manifest: dict[str, Any]) -> bool:
        return manifest.get("config_digest") == self.config.digest()

    def incompatible(self, folder: Path, changed: list[tuple[str, Any, Any]]) -> DraftsetError:
        name = self.config.name
        what = f" ({', '.join(k for k, _, _ in changed)})" if changed else ""
        return DraftsetError(
            f"mix {name!r} already exists with a different config{what} ({folder / 'manifest.json'})",
            hint=f"pass --overwrite to rebuild it, or choose another name than {name!r}",
        )

    def reuse(self, run: StageRun, manifest: dict[str, Any]) -> None:
        run.seen(manifest["samples_selected"])
        run.skipped("already_built", manifest["samples_selected"])

    def prepare(self) -> None:
        """Dedup the sources first, into the mix's own folder; its manifest is this stage's upstream."""
        config = self.config
        self.dedup = run_dedup(
            self.mix_catalog,
            self.home,
            DedupConfig(
                repos=self.repos,
                threshold=config.threshold,
                min_prompt_tokens=config.min_prompt_tokens,
                max_prompt_tokens=config.max_prompt_tokens,
                length_unit=self.counter.method,
            ),
            self.work_dir / "dedup",
            self.counter,
            self.progress,
            workers=self.workers,
            executor=self.executor,
        )
        self.upstream.append(self.dedup.manifest)

    def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        config, dedup = self.config, self.dedup
        dirs = [Home(self.home).normalized(r) for r in self.repos]
        meta = read_table(dirs, columns=["id", "repo_id", "category", "revision"]).to_pylist()
        candidates = [r for r in meta if r["id"] in dedup.kept_ids]
        run.seen(len(candidates))
        chosen, plan = select(config, candidates)
        run.tally("not_selected", len(candidates) - len(chosen))
        scratch = self.work_dir / ".select"
        scratch.mkdir(parents=True, exist_ok=True)
        write_chosen(scratch / "chosen.parquet", chosen)
        shards = [p for d in dirs for p in shard_paths(d)]
        task = CopyChosen(tuple(map(str, shards)), str(scratch / "chosen.parquet"), str(self.work_dir))
        tasks = max(1, min(len(shards), 2 * self.workers))
        copied = summed(run_tasks(task, tasks, scratch / "tasks", workers=self.workers, executor=self.executor)).get(
            "rows", 0
        )
        shutil.rmtree(scratch)
        if copied != len(chosen):  # every chosen id is in exactly one input shard
            raise StageFailed(
                f"mix {config.name!r} copied {copied} rows but chose {len(chosen)}",
                stage=self.name,
                run_id=run.run_id,
                counts=run.counts,
                hint="an input shard changed while the mix ran; re-run it",
            )
        run.emitted(copied)
        revisions = {r["repo_id"]: r["revision"] for r in meta}
        ingested = Counter(r["repo_id"] for r in meta)
        for repo, entry in plan["sources"].items():
            entry["revision"] = revisions.get(repo)
            entry["ingested"] = ingested[repo]
            entry["dedup_dropped"] = entry["ingested"] - entry["candidates"]
        return {
            "name": config.name,
            "plan_id": config.plan_id,
            "seed": config.seed,
            "config_digest": config.digest(),
            "samples_requested": config.samples,
            "samples_selected": len(chosen),
            "shortfall": max(0, (config.samples or 0) - len(chosen)),
            "length_unit": config.length_unit,
            "dedup_run_id": dedup.run_id,
            "dedup_counts": dedup.counts,
            "mix_run_id": run.run_id,
            "missing_sources": self.targets.missing,
            "unplanned_sources": self.targets.unplanned,
            "held_back_sources": self.targets.held_back,
            "shards": [p.name for p in shard_paths(self.work_dir)],
            "created_at": datetime.now(UTC).isoformat(),
            **plan,
        }


def run_mix(
    catalog: Catalog,
    home: Path,
    name: str,
    *,
    plan_id: str | None = None,
    samples: int | None = None,
    weights: dict[str, float] | None = None,
    seed: int = field_default(MixConfig, "seed"),
    threshold: float = field_default(MixConfig, "threshold"),
    max_prompt_tokens: int = field_default(MixConfig, "max_prompt_tokens"),
    min_prompt_tokens: int = field_default(MixConfig, "min_prompt_tokens"),
    tokenizer: Path | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    workers: int = 1,
    executor: Executor = "local",
) -> MixResult:
    final = Home(home).mix(name)
    targets = load_targets(catalog, home, plan_id, samples, weights)
    counter = TokenCounter.resolve(tokenizer, home)
    config = MixConfig(
        name=name,
        plan_id=targets.plan_id,
        samples=targets.samples,
        seed=seed,
        category_weights=targets.category_weights,
        source_category=targets.source_category,
        source_quotas=targets.source_quotas,
        held_back=sorted(targets.held_back),
        threshold=threshold,
        min_prompt_tokens=min_prompt_tokens,
        max_prompt_tokens=max_prompt_tokens,
        length_unit=counter.method,
    )
    stage = MixStage(
        config,
        final,
        catalog,
        home=home,
        counter=counter,
        targets=targets,
        overwrite=overwrite,
        progress=progress,
        workers=workers,
        executor=executor,
    )
    result = stage.run()
    return MixResult(name, result.out_dir, result.manifest, reused=result.reused)
