"""Several datasets ingested: one after another, or at once as executor tasks (datatrove's local pool or a
cluster). `ingest` is the entry point the CLI and the service call; run.py ingests one dataset.

Each task ingests the datasets its rank owns with the same `ingest_one` the sequential path runs, and
writes each dataset's result (counts, or the error and its hint) as a JSON file; the parent returns them
in the order asked. Workers share the catalog file: each stage run holds the DuckDB writer only for its
short transactions, and `Catalog` retries while another process holds it. A dataset's own ingest lock
and resume by id are unchanged, so the task folder is per invocation: a re-run is a new ingest that
resumes every dataset by id (and tops samples up), not a replay of completed tasks.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.progress import Progress

from catalog import Catalog
from catalog.home import Home
from catalog.io import write_json_atomic
from pipeline.ingest.config import IngestConfig
from pipeline.ingest.run import DatasetResult, ingest_one
from pipeline.ingest.sample import plan_quotas
from pipeline.parallel import Executor, owned, run_tasks
from pipeline.stage import field_default

Job = tuple[str, int | None, int | None]  # repo, rows to take (None: all), rows it has


@dataclass(frozen=True)
class IngestTask:
    home: str
    jobs: tuple[Job, ...]
    settings: tuple[tuple[str, Any], ...]
    results: str

    def __call__(self, rank: int, world: int) -> dict[str, int]:
        catalog, done, failed = Catalog(Path(self.home)), 0, 0
        for number, job in owned(list(enumerate(self.jobs)), rank, world):
            result = ingest_one(catalog, Path(self.home), job, dict(self.settings))
            write_json_atomic(Path(self.results) / f"{number:05d}.json", asdict(result))
            done, failed = done + 1, failed + (result.error is not None)
        return {"datasets": done, "failed": failed}

    def __repr__(self) -> str:  # never the settings: they hold the Hub token
        return f"IngestTask({len(self.jobs)} datasets)"


def ingest_in_parallel(
    home: Path, jobs: list[Job], settings: dict[str, Any], *, workers: int, executor: Executor
) -> list[DatasetResult]:
    scratch = Home(home).root / "tmp" / f"ingest-{uuid.uuid4().hex[:8]}"
    task = IngestTask(str(home), tuple(jobs), tuple(sorted(settings.items())), str(scratch / "results"))
    try:
        run_tasks(task, max(1, min(len(jobs), workers)), scratch / "tasks", workers=workers, executor=executor)
        return [
            DatasetResult(**json.loads((scratch / "results" / f"{n:05d}.json").read_text())) for n in range(len(jobs))
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ingest(
    catalog: Catalog,
    home: Path,
    repos: list[str],
    *,
    endpoint: str,
    token: str | None = None,
    fresh: bool = False,
    progress: Progress | None = None,
    max_conversation_chars: int = field_default(IngestConfig, "max_conversation_chars"),
    plan_id: str | None = None,
    all_rows: bool = False,
    oversample: float = field_default(IngestConfig, "oversample"),
    sample_seed: int = field_default(IngestConfig, "sample_seed"),
    workers: int = 1,
    executor: Executor = "local",
) -> list[DatasetResult]:
    """Ingest each dataset; a failure is kept in its result (with the hint) and the rest go on.

    With `plan_id` (and not `all_rows`) each planned source is read up to its quota x `oversample`. With
    several `workers` (or a cluster `executor`) datasets are ingested in parallel (below)."""
    quotas = plan_quotas(catalog, plan_id) if plan_id and not all_rows else {}
    settings: dict[str, Any] = {
        "endpoint": endpoint,
        "token": token,
        "fresh": fresh,
        "max_conversation_chars": max_conversation_chars,
        "oversample": oversample,
        "sample_seed": sample_seed,
    }
    jobs = [(repo_id, *quotas.get(repo_id, (None, None))) for repo_id in repos]
    if workers > 1 or executor != "local":
        return ingest_in_parallel(home, jobs, settings, workers=workers, executor=executor)
    return [ingest_one(catalog, home, job, settings, progress) for job in jobs]
