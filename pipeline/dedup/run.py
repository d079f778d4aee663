"""The dedup stage: prompt-length filter, exact and near duplicates across all given sources, out of core.

Which row survives is decided by a fixed order, so the result never depends on read order or on how the
work was split: target-native rows first (their answers are worth most), then repo id, config, split, row
index. Every row gets one decision (kept | exact | near | too_long | too_short) with the row it duplicates
and the measured similarity, written to the `dedup` catalog table (queryable with `draftset sql`) and to
`decisions.parquet` beside the stage's config and stats.

Two steps (README, "Curation at scale"): `sketch.SketchTask` turns each normalized shard into a keys file
(hash, length, MinHash signature, LSH bands) on N workers through `pipeline.parallel` (datatrove's
executors, so the same code runs on a Ray or Slurm cluster); `decide` then finds duplicates over the keys
files in DuckDB, out of core. Memory is one batch per worker plus DuckDB's `memory_limit_mb`.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from rich.progress import Progress

from catalog import Catalog
from catalog.errors import StageFailed
from catalog.home import Home
from catalog.io import atomic_path, write_json_atomic
from catalog.shards import shard_paths
from pipeline.dedup import decide
from pipeline.dedup.config import DedupConfig
from pipeline.dedup.minhash import bands
from pipeline.dedup.sketch import SketchTask
from pipeline.parallel import Executor, run_tasks, summed
from pipeline.stage import Stage, StageRun
from pipeline.targets.lengths import TokenCounter

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
    decisions: Path
    counts: dict[str, int]
    manifest: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def kept_ids(self) -> set[str]:
        """Ids of the kept rows (read from decisions.parquet when first asked for)."""
        table = pq.read_table(self.decisions, columns=["record_id"], filters=[("kept", "=", True)])
        return set(table.column("record_id").to_pylist())


class DedupStage(Stage[DedupConfig]):
    """Recomputes every decision on each run (a decision depends on all the other rows); an interrupted
    run's finished keys files and tasks are reused when the inputs and settings are the same."""

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
        workers: int = 1,
        executor: Executor = "local",
    ):
        super().__init__(config, out_dir, catalog)
        self.home, self.counter, self.progress = Path(home), counter, progress
        self.workers, self.executor = max(1, workers), executor

    def inputs(self) -> list[Path]:
        return [Home(self.home).normalized(r) for r in self.config.repos]

    def outputs(self) -> list[str]:
        return ["decisions.parquet"]

    def shards(self) -> list[Path]:
        return [p for d in self.inputs() for p in shard_paths(d)]

    def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        config = self.config
        shards = self.shards()
        n_bands, rows_per_band = bands(config.threshold, config.num_perm)
        scratch = self.work_dir / "scratch"
        keys_dir = scratch / "keys"
        self._reuse_or_clear(scratch, shards)
        keys_dir.mkdir(parents=True, exist_ok=True)
        tasks = max(1, min(len(shards), 2 * self.workers))
        task = SketchTask(
            tuple(str(p) for p in shards),
            str(keys_dir),
            config.threshold,
            config.num_perm,
            config.ngram,
            str(self.counter.tokenizer_dir) if self.counter.tokenizer_dir else None,
        )
        per_task = run_tasks(task, tasks, scratch / f"tasks-{tasks}", workers=self.workers, executor=self.executor)
        sketched = summed(per_task)
        target = self.work_dir / "decisions.parquet"
        settings = decide.DecideSettings(
            config.threshold,
            config.min_prompt_tokens,
            config.max_prompt_tokens,
            n_bands,
            config.num_perm,
            memory_limit_mb=config.memory_limit_mb,
            threads=self.workers,
        )
        con = decide.connect(scratch / "duck", settings)
        decide_start = time.process_time()  # DuckDB's threads count: they are this process's
        try:
            n_rows = 0
            if shards:
                decide.load(con, str(keys_dir / "keys-*.parquet"), settings)
                decide.near_duplicates(con, settings)
                n_rows = con.execute("SELECT count(*) FROM r").fetchone()[0]  # type: ignore[index]
            expected = sketched.get("rows", 0) + sketched.get("rows_resumed", 0)
            if n_rows != expected:  # the ranks' counts must add up to what the decision read
                raise StageFailed(
                    f"dedup read {n_rows} rows from the keys files, but its {tasks} tasks counted {expected}",
                    stage=self.name,
                    run_id=run.run_id,
                    counts=run.counts,
                    hint=f"delete {scratch} and run again (its keys files disagree with its task counts)",
                )
            with atomic_path(target) as tmp:
                if shards:
                    decide.write_decisions(con, tmp, run.run_id, self.counter.method)
                else:
                    pq.write_table(DECISIONS.empty_table(), tmp)
        finally:
            con.close()
        decide_cpu = time.process_time() - decide_start
        kept = self._account(target, run)
        _record(self.catalog, target)
        shutil.rmtree(scratch, ignore_errors=True)
        return {
            "repos": config.repos,
            "length_unit": self.counter.method,
            "kept": kept,
            "shards": len(shards),
            "tasks": tasks,
            "workers": self.workers,
            "executor": self.executor,
            "bands": [n_bands, rows_per_band],
            # CPU seconds by phase, summed over tasks: parsing the records, normalize + MinHash + bands (the
            # near-dedup work per row), writing keys files, and the decision (DuckDB + pair checks + clusters)
            "cpu_s": {
                **{k.removeprefix("cpu_ms_"): v / 1000 for k, v in sketched.items() if k.startswith("cpu_ms_")},
                "decide": round(decide_cpu, 3),
            },
        }

    def _reuse_or_clear(self, scratch: Path, shards: list[Path]) -> None:
        """Keep an interrupted run's keys files only for the very same inputs and settings."""
        fingerprint = {
            "shards": [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in shards],
            "config": self.config.model_dump(mode="json"),
            "length_unit": self.counter.method,
        }
        marker = scratch / "inputs.json"
        if marker.is_file() and json.loads(marker.read_text()) == fingerprint:
            return
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        write_json_atomic(marker, fingerprint)

    def _account(self, decisions: Path, run: StageRun) -> int:
        """Counts and quarantine entries from the decisions, a batch at a time; returns the kept count."""
        kept = 0
        task = (
            self.progress.add_task("dedup", total=pq.ParquetFile(decisions).metadata.num_rows)
            if self.progress
            else None
        )
        for batch in pq.ParquetFile(decisions).iter_batches(batch_size=8_192):
            cols = batch.to_pydict()
            n = batch.num_rows
            run.seen(n)
            for i in range(n):
                if cols["kept"][i]:
                    kept += 1
                    continue
                run.drop(
                    cols["reason"][i],
                    where={
                        "record_id": cols["record_id"][i],
                        "repo_id": cols["repo_id"][i],
                        "row_index": cols["row_index"][i],
                        "duplicate_of": cols["duplicate_of"][i],
                        "similarity": cols["similarity"][i],
                        "prompt_tokens": cols["prompt_tokens"][i],
                    },
                )
            if self.progress and task is not None:
                self.progress.advance(task, n)
        run.emitted(kept)
        return kept


def run_dedup(
    catalog: Catalog,
    home: Path,
    config: DedupConfig,
    out_dir: Path,
    counter: TokenCounter,
    progress: Progress | None = None,
    *,
    workers: int = 1,
    executor: Executor = "local",
) -> DedupResult:
    """Decide every row of `config.repos`; record the decisions; return where they are (and the kept ids)."""
    stage = DedupStage(
        config, out_dir, catalog, home=home, counter=counter, progress=progress, workers=workers, executor=executor
    )
    result = stage.run()
    return DedupResult(result.run_id, result.out_dir / "decisions.parquet", result.counts, result.manifest)


def _record(catalog: Catalog, decisions: Path) -> None:
    """The decisions into the `dedup` table, scanned by DuckDB from an Arrow table (no rows through Python).
    Read by pyarrow, not DuckDB's read_parquet: the service's catalog connection has file access turned off
    (catalog/owner.py), and a mix run as a service job records its dedup through that connection."""
    import pyarrow.parquet as pq

    cols = ", ".join(_TABLE_COLUMNS)
    table = pq.read_table(decisions, columns=list(_TABLE_COLUMNS))
    with catalog.writer() as con:
        con.register("dedup_decisions", table)
        try:
            con.execute(f"INSERT OR REPLACE INTO dedup ({cols}) SELECT {cols} FROM dedup_decisions")
        finally:
            con.unregister("dedup_decisions")
