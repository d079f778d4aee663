"""Is the process that owns a run still alive? Run owners, the interrupted sweep and per-dataset locks.

A run row records its owner as "host:pid:start" (start = the process start time in clock ticks from
/proc, so a recycled pid is not mistaken for the dead run). A `running` row whose owner is on this host
and no longer alive is marked `interrupted` by `mark_interrupted` (called when a stage starts, by find
and by `draftset status`). Rows owned by another host are left alone: we cannot see its processes.

`run_lock` is an flock on a file beside a stage's outputs: the kernel drops it when the process dies,
so a killed ingest never leaves a stale lock behind, and two ingests of one dataset cannot interleave.
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from catalog.errors import DraftsetError


def _start_ticks(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]  # field 22, after the parenthesised command name
    except (OSError, IndexError):
        return "?"


def owner() -> str:
    """This process as a run owner: host:pid:start."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


def is_alive(run_owner: str | None) -> bool | None:
    """True/False for an owner on this host; None when unknown (no owner recorded, another host)."""
    if not run_owner:
        return None
    parts = run_owner.split(":")
    if len(parts) < 3:
        return None
    host, pid_text, start = ":".join(parts[:-2]), parts[-2], parts[-1]
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return start == "?" or _start_ticks(pid) in ("?", start)


def mark_interrupted(catalog: Any) -> int:
    """Mark `running` stage and find runs whose owner died as `interrupted`; returns how many."""
    if not catalog.path.exists():
        return 0
    dead: dict[str, list[str]] = {"stage_runs": [], "search_runs": []}
    try:
        for table in dead:
            for row in catalog.query(f"SELECT run_id, owner FROM {table} WHERE status = 'running'"):
                if is_alive(row["owner"]) is False:
                    dead[table].append(row["run_id"])
        if not any(dead.values()):
            return 0
        with catalog.writer() as con:
            for table, ids in dead.items():
                for run_id in ids:
                    con.execute(
                        f"UPDATE {table} SET status = 'interrupted', error = coalesce(error, "
                        "'the process running it died (killed, crashed or the machine stopped)') "
                        "WHERE run_id = ? AND status = 'running'",
                        [run_id],
                    )
    except DraftsetError:  # busy or not migrated yet: the sweep is best effort, the next one catches up
        return 0
    except Exception as exc:  # an old catalog without the owner column, before its migration
        if "owner" in str(exc):
            return 0
        raise
    return sum(len(v) for v in dead.values())


@contextmanager
def run_lock(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock file for `what` (e.g. "ingest of lab/x"); a second holder gets one clear error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise DraftsetError(
                f"{what} is already running ({holder})",
                hint="wait for it to finish; the lock is released when that process ends",
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(owner())
        fh.flush()
        yield
    finally:
        fh.close()  # closing releases the flock
