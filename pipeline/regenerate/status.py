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
            "SELECT run_id, stage, status, counts, started_at, finished_at, error FROM stage_runs "
            "ORDER BY started_at DESC LIMIT ?",
            [limit],
        )
    except CatalogBusy:
        return None


def format_counts(counts: Any) -> str:
    data = json.loads(counts) if isinstance(counts, str) else (counts or {})
    return " ".join(f"{k}={v}" for k, v in data.items() if v)
