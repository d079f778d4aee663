"""The dedup stage: prompt-length filter, exact and near duplicates across all given sources.

Which row survives is decided by a fixed order, so the result never depends on read order:
target-native rows first (their answers are worth most), then repo id, config, split, row index.
Every row gets one decision (kept | exact | near | too_long | too_short) with the row it duplicates
and the measured similarity, written to the `dedup` catalog table (queryable with `draftset sql`)
and to `decisions.parquet` beside the stage's config and stats.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from rich.progress import Progress

from catalog import Catalog
from catalog.home import Home
from catalog.io import atomic_path
from catalog.shards import iter_rows
from pipeline.dedup.config import DedupConfig
from pipeline.dedup.near import NearIndex
from pipeline.rows.codec import from_row
from pipeline.rows.keys import hash_normalized, normalize
from pipeline.stage import Stage, StageRun
from pipeline.target.lengths import TokenCounter

DECISIONS = pa.schema(
    [
        ("record_id", pa.string()),
        ("repo_id", pa.string()),
        ("row_index", pa.int64()),
        ("prompt_hash", pa.string()),
        ("kept", pa.bool_()),
        ("duplicate_of", pa.string()),
        ("reason", pa.string()),
        ("similarity", pa.float64()),
        ("stage_run_id", pa.string()),
        ("category", pa.string()),
        ("mode", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("length_unit", pa.string()),
    ]
)
_TABLE_COLUMNS = DECISIONS.names[:9]  # the `dedup` table's columns (0001_core.sql)


@dataclass
class DedupResult:
    run_id: str
    kept_ids: set[str]
    counts: dict[str, int]
    manifest: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Row:
    id: str
    repo_id: str
    config: str
    split: str
    row_index: int
    category: str
    mode: str
    normalized: str
    tokens: int

    def order(self) -> tuple[Any, ...]:
        return (self.mode != "native", self.repo_id, self.config, self.split, self.row_index, self.id)


def _load(home: Path, repos: list[str], counter: TokenCounter, batch: int = 2_048) -> list[_Row]:
    rows: list[_Row] = []
    pending: list[tuple[dict[str, Any], str, str]] = []

    def flush() -> None:
        counts = counter.count_many([ctx for _, _, ctx in pending])
        for (raw, norm, _), n in zip(pending, counts):
            rows.append(
                _Row(
                    raw["id"],
                    raw["repo_id"],
                    raw["config"],
                    raw["split"],
                    raw["row_index"],
                    raw["category"],
                    raw["mode"],
                    norm,
                    n,
                )
            )
        pending.clear()

    for raw in iter_rows([Home(home).normalized(r) for r in repos]):
        conv = from_row(raw)
        pending.append((raw, normalize(conv.prompt_text()), conv.context_text()))
        if len(pending) >= batch:
            flush()
    flush()
    return rows


class DedupStage(Stage[DedupConfig]):
    """Recomputes every decision on each run (no resume by id: a decision depends on all the other rows)."""

    name = "dedup"
    config_model = DedupConfig
    compatible_on = ()  # nothing to resume, so nothing to be compatible with
    catalog: Catalog  # not optional here: the decisions go into its `dedup` table

    def __init__(
        self,
        config: DedupConfig,
        out_dir: Path,
        catalog: Catalog,
        *,
        home: Path,
        counter: TokenCounter,
        progress: Progress | None = None,
    ):
        super().__init__(config, out_dir, catalog)
        self.home, self.counter, self.progress = Path(home), counter, progress
        self.kept: set[str] = set()

    def inputs(self) -> list[Path]:
        return [Home(self.home).normalized(r) for r in self.config.repos]

    def outputs(self) -> list[str]:
        return ["decisions.parquet"]

    def rows(self) -> list[_Row]:
        return sorted(_load(self.home, self.config.repos, self.counter), key=_Row.order)

    def process(self, rows: Iterable[_Row], run: StageRun) -> dict[str, Any]:
        config, counter, progress = self.config, self.counter, self.progress
        rows = list(rows)
        index = NearIndex(config.threshold, config.num_perm, config.ngram)
        sigs = index.signatures(r.normalized for r in rows)
        first_by_hash: dict[str, str] = {}
        out: dict[str, list[Any]] = {name: [] for name in DECISIONS.names}
        task = progress.add_task("dedup", total=len(rows)) if progress else None
        for row, sig in zip(rows, sigs):
            run.seen()
            phash = hash_normalized(row.normalized)
            dup_of, sim, reason = None, None, "kept"
            if row.tokens < config.min_prompt_tokens:
                reason = "too_short"
            elif row.tokens > config.max_prompt_tokens:
                reason = "too_long"
            elif phash in first_by_hash:
                reason, dup_of, sim = "exact", first_by_hash[phash], 1.0
            elif (match := index.match_or_add(row.id, sig)) is not None:
                reason, (dup_of, sim) = "near", match
            if reason == "kept":
                first_by_hash[phash] = row.id
                run.emitted()
            else:
                run.drop(
                    reason,
                    where={
                        "record_id": row.id,
                        "repo_id": row.repo_id,
                        "row_index": row.row_index,
                        "duplicate_of": dup_of,
                        "similarity": sim,
                        "prompt_tokens": row.tokens,
                    },
                )
            for name, value in zip(
                DECISIONS.names,
                (
                    row.id,
                    row.repo_id,
                    row.row_index,
                    phash,
                    reason == "kept",
                    dup_of,
                    reason,
                    sim,
                    run.run_id,
                    row.category,
                    row.mode,
                    row.tokens,
                    counter.method,
                ),
            ):
                out[name].append(value)
            if progress and task is not None:
                progress.advance(task)
        decisions = pa.table(out, schema=DECISIONS)
        _record(self.catalog, decisions, self.work_dir)
        self.kept = {rid for rid, k in zip(out["record_id"], out["kept"]) if k}
        return {"repos": config.repos, "length_unit": counter.method, "kept": len(self.kept)}


def run_dedup(
    catalog: Catalog,
    home: Path,
    config: DedupConfig,
    out_dir: Path,
    counter: TokenCounter,
    progress: Progress | None = None,
) -> DedupResult:
    """Decide every row of `config.repos`; record the decisions; return the kept ids."""
    stage = DedupStage(config, out_dir, catalog, home=home, counter=counter, progress=progress)
    result = stage.run()
    return DedupResult(result.run_id, stage.kept, result.counts, result.manifest)


def _record(catalog: Catalog, decisions: pa.Table, out_dir: Path) -> None:
    """decisions.parquet (atomic) and the `dedup` table (one bulk insert through Arrow)."""
    with atomic_path(out_dir / "decisions.parquet") as tmp:
        pq.write_table(decisions, tmp)
    cols = ", ".join(_TABLE_COLUMNS)
    with catalog.writer() as con:
        con.register("dedup_decisions", decisions.select(_TABLE_COLUMNS))
        con.execute(f"INSERT OR REPLACE INTO dedup ({cols}) SELECT {cols} FROM dedup_decisions")
        con.unregister("dedup_decisions")
