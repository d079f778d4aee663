"""What `draftset status` shows: regeneration jobs from their progress.json, recent stage runs.

Read-only by construction: it reads progress files (written atomically by the running job) and opens
the catalog through `Catalog.query`, which uses a read-only connection.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from catalog.db import Catalog
from catalog.errors import CatalogBusy
from catalog.home import Home
from pipeline.regenerate.progress import PROGRESS_FILE


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


def regen_jobs(home: Path) -> list[dict[str, Any]]:
    """One entry per data/regen/<MIX>/[shard-I-of-N/]progress.json (a damaged file: only `problem`); a
    'running' job whose process is gone says so (checked for this host's workers only: another host's pid
    means nothing here)."""
    jobs = []
    regen = Home(home).regen_root
    for path in sorted([*regen.glob(f"*/{PROGRESS_FILE}"), *regen.glob(f"*/shard-*/{PROGRESS_FILE}")]):
        try:
            job = json.loads(path.read_text())
        except FileNotFoundError:
            continue  # removed between the listing and the read
        except (OSError, ValueError) as exc:  # never half-written (atomic rename): damaged, so say so
            job = {"problem": f"{path} is unreadable ({exc})"}
        here = job.get("host", socket.gethostname()) == socket.gethostname()
        if job.get("state") == "running" and here and not _alive(job.get("pid")):
            job["state"] = "stopped (process gone: rerun to resume)"
        jobs.append(job)
    return jobs


def recent_stage_runs(home: Path, limit: int = 10) -> list[dict[str, Any]] | None:
    """Newest stage runs first; None while a writer holds the catalog past the busy timeout."""
    catalog = Catalog(home)
    if not catalog.path.exists():
        return []
    try:
        return catalog.query(
            "SELECT run_id, stage, status, counts, params, started_at, finished_at, error FROM stage_runs "
            "ORDER BY started_at DESC LIMIT ?",
            [limit],
        )
    except CatalogBusy:
        return None


def run_subject(params: Any) -> str:
    """What a run worked on, from its stored config: the dataset of an ingest, the mix of a mix, regenerate or
    build, the folder of a capture or train, the sources of a dedup (each config names it under its own key)."""
    data = json.loads(params) if isinstance(params, str) else (params or {})
    for key in ("repo_id", "name", "mix", "build_dir", "capture_dir", "out_dir"):
        if data.get(key):
            return str(data[key]).rstrip("/").rsplit("/", 1)[-1] if key.endswith("_dir") else str(data[key])
    repos = data.get("repos") or []
    return f"{len(repos)} datasets" if len(repos) > 1 else (str(repos[0]) if repos else "")


def format_counts(counts: Any) -> str:
    data = json.loads(counts) if isinstance(counts, str) else (counts or {})
    return " ".join(f"{k}={v}" for k, v in data.items() if v)


# `draftset status --json`: the raw numbers behind the tables (counts, seconds, rates), units in the key names.
JOB_COUNTS = ("total", "results", "errors", "skipped", "resumed")


def job_record(job: dict[str, Any]) -> dict[str, Any]:
    """One regeneration job's progress as numbers: `done` = answered + failed + skipped + resumed."""
    counts = {k: int(job.get(k) or 0) for k in JOB_COUNTS}
    return {
        "mix": job.get("mix"),
        "shard": job.get("shard"),
        "state": job.get("state"),
        "done": sum(counts[k] for k in JOB_COUNTS if k != "total"),
        **counts,
        "req_per_s": job.get("req_s"),
        "tok_per_s": job.get("tok_s"),
        "mean_completion_tokens": job.get("mean_completion_tokens"),
        "eta_s": job.get("eta_s"),
        "updated_at": job.get("updated_at"),
    }


def run_record(run: dict[str, Any]) -> dict[str, Any]:
    """One stage run with its counts as a mapping of numbers (the table shows them as `in=19,332 ...`)."""
    counts = json.loads(run["counts"]) if isinstance(run.get("counts"), str) else (run.get("counts") or {})
    return {
        "run_id": run["run_id"],
        "stage": run["stage"],
        "subject": run_subject(run.get("params")),
        "status": run["status"],
        "counts": counts,
        "started_at": run.get("started_at"),
        "finished_at": run.get("finished_at"),
        "error": run.get("error"),
    }
