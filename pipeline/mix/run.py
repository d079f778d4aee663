"""`draftset mix NAME`: dedup the plan's sources, then pick N records by category weight and
per-source cap, deterministically under a seed, into data/mix/NAME/ with a manifest.

The mix is built in a hidden staging folder and renamed into place, so data/mix/NAME is always
either the previous complete mix or the new complete one. Re-running with the same config is a no-op
(counted as skipped); a different config needs --overwrite.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.progress import Progress

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.shards import ParquetShardWriter, iter_rows, read_table
from pipeline.dedup.run import DedupConfig, run_dedup
from pipeline.mix.allocate import allocate
from pipeline.mix.config import MixConfig
from pipeline.mix.targets import MixTargets, load_targets
from pipeline.model.lengths import TokenCounter
from pipeline.stage import StageRun
from pipeline.stage_base import Stage
from pipeline.stage_file import field_default


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
    room = {s: min(len(ids), config.source_caps.get(s) or len(ids)) for s, ids in by_source.items()}
    sources_in: dict[str, list[str]] = defaultdict(list)
    for s in sorted(by_source):
        sources_in[category_of[s]].append(s)
    weights = {c: config.category_weights.get(c, 0.0) if config.category_weights else 1.0 for c in sources_in}
    cat_room = {c: sum(room[s] for s in ss) for c, ss in sources_in.items()}
    total = config.samples if config.samples is not None else sum(cat_room.values())
    per_cat = allocate(total, weights, cat_room)
    chosen: set[str] = set()
    report: dict[str, Any] = {"categories": {}, "sources": {}}
    for cat, srcs in sorted(sources_in.items()):
        per_src = allocate(per_cat[cat], {s: float(room[s]) for s in srcs}, room)
        for s in srcs:
            picked = sorted(by_source[s], key=lambda i: _seeded_key(config.seed, i))[: per_src[s]]
            chosen.update(picked)
            report["sources"][s] = {
                "category": cat,
                "candidates": len(by_source[s]),
                "cap": config.source_caps.get(s),
                "selected": per_src[s],
            }
        report["categories"][cat] = {
            "weight": weights[cat],
            "room": cat_room[cat],
            "target": round(total * weights[cat] / (sum(weights.values()) or 1)),
            "selected": per_cat[cat],
        }
    report["samples_target"] = total
    return chosen, report


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
    ):
        super().__init__(config, out_dir, catalog, fresh=overwrite)
        self.home, self.counter, self.targets, self.progress = Path(home), counter, targets, progress
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
                repos=sorted(config.source_category),
                threshold=config.threshold,
                min_prompt_tokens=config.min_prompt_tokens,
                max_prompt_tokens=config.max_prompt_tokens,
                length_unit=self.counter.method,
            ),
            self.work_dir / "dedup",
            self.counter,
            self.progress,
        )
        self.upstream.append(self.dedup.manifest)

    def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        config, dedup = self.config, self.dedup
        dirs = [Home(self.home).normalized(r) for r in sorted(config.source_category)]
        meta = read_table(dirs, columns=["id", "repo_id", "category", "revision"]).to_pylist()
        candidates = [r for r in meta if r["id"] in dedup.kept_ids]
        run.seen(len(candidates))
        chosen, plan = select(config, candidates)
        run.tally("not_selected", len(candidates) - len(chosen))
        with ParquetShardWriter(self.work_dir) as writer:
            for row in iter_rows(dirs):
                if row["id"] in chosen:
                    writer.write(row)
                    run.emitted()
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
            "shards": [p.name for p in writer.written],
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
    seed: int = field_default(MixConfig, "seed"),
    threshold: float = field_default(MixConfig, "threshold"),
    max_prompt_tokens: int = field_default(MixConfig, "max_prompt_tokens"),
    min_prompt_tokens: int = field_default(MixConfig, "min_prompt_tokens"),
    tokenizer: Path | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> MixResult:
    final = Home(home).mix(name)
    targets = load_targets(catalog, home, plan_id, samples)
    counter = TokenCounter.resolve(tokenizer, home)
    config = MixConfig(
        name=name,
        plan_id=targets.plan_id,
        samples=targets.samples,
        seed=seed,
        category_weights=targets.category_weights,
        source_category=targets.source_category,
        source_caps=targets.source_caps,
        threshold=threshold,
        min_prompt_tokens=min_prompt_tokens,
        max_prompt_tokens=max_prompt_tokens,
        length_unit=counter.method,
    )
    stage = MixStage(
        config, final, catalog, home=home, counter=counter, targets=targets, overwrite=overwrite, progress=progress
    )
    result = stage.run()
    return MixResult(name, result.out_dir, result.manifest, reused=result.reused)
