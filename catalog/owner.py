"""One process owns the catalog: the team service (`draftset serve`) holds it open for its lifetime.

DuckDB lets exactly one process open a file read-write, and inside that process every connection must
share one configuration. The service therefore opens the file once (`own`), and while it does, every
`Catalog` of that home in this process is served from the one database instance: writers get a cursor
under a process-wide lock (one writer at a time, so no transaction conflicts), readers get a cursor of
their own (DuckDB's MVCC gives each a consistent snapshot while a writer works).

Other processes cannot open the file while the service holds it. `service.json` beside the catalog says
who holds it, so their `Catalog` fails at once with the one-line busy error naming the service's URL
instead of retrying for seconds.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from catalog.home import Home


@dataclass
class Owner:
    """The owning process's one database instance and its writer lock."""

    path: Path
    con: duckdb.DuckDBPyConnection
    write_lock: threading.RLock = field(default_factory=threading.RLock)
    # Queries running at once on the instance. More than the cores only thrash: on 2 cores, 8 threads
    # querying one instance answer ~270 small queries/s, one thread ~830 (measured, see bench_service).
    read_slots: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(max(1, min(4, os.cpu_count() or 1)))
    )
    # Bumped after every committed write: a reader's cache keyed on it is exact (every write of this
    # home goes through this process while it owns the file).
    generation: int = 0


_OWNED: dict[Path, Owner] = {}
_GUARD = threading.Lock()


def _key(path: Path) -> Path:
    return Path(path).resolve()


def owner_of(path: Path) -> Owner | None:
    """The owner of the catalog file `path` in this process, if any."""
    return _OWNED.get(_key(path)) if _OWNED else None


def read_slot(path: Path) -> AbstractContextManager[object]:
    """Hold one of the owner's query slots while a query executes or fetches (no-op when not owned)."""
    owner = owner_of(path)
    return owner.read_slots if owner is not None else nullcontext()


def own(path: Path, connect: Callable[[], duckdb.DuckDBPyConnection]) -> Owner:
    """Open and hold `path` for this process; `connect()` opens the read-write connection (with its retry)."""
    with _GUARD:
        if _key(path) in _OWNED:
            return _OWNED[_key(path)]
        # File-system access stays off: nothing the catalog does reads or writes other files, and the
        # SQL console's queries run on this instance (no COPY TO, ATTACH, read_csv('/etc/...')).
        con = connect()
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        owner = Owner(_key(path), con)
        _OWNED[owner.path] = owner
        return owner


def release(path: Path) -> None:
    with _GUARD:
        owner = _OWNED.pop(_key(path), None)
    if owner is not None:
        with owner.write_lock:
            owner.con.close()


# -- the service file: who owns the catalog, for other processes' one-line busy error -------------
def write_service_file(home: Path, url: str) -> Path:
    path = Home(home).service_file
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"url": url, "pid": os.getpid()}))
    os.replace(tmp, path)
    return path


def remove_service_file(home: Path) -> None:
    path = Home(home).service_file
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def running_service(home: Path) -> dict[str, Any] | None:
    """{url, pid} of a live service on `home` (another process), else None; a stale file is ignored."""
    try:
        info = json.loads(Home(home).service_file.read_text())
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return {"url": str(info.get("url", "")), "pid": pid}


# -- who holds the file when it is not the service: DuckDB names the holder's pid in its lock error ----------
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def pid_in_lock_error(exc: BaseException) -> int | None:
    """The pid DuckDB names in a lock conflict ("Conflicting lock is held in ... (PID 123)"), if it does."""
    found = _LOCK_PID.search(str(exc))
    return int(found.group(1)) if found else None


def command_of(pid: int) -> str | None:
    """`draftset ingest --repo a/b`: the process's command line from /proc when this host can read it, with
    control characters removed and anything token-like redacted (an argv may carry a URL with credentials)."""
    from catalog.untrusted import clean_text, redact

    try:
        argv = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return None
    for i, arg in enumerate(argv):  # `python -m pipeline.cli.app ARGS` and the `draftset` script read the same
        if arg == "pipeline.cli.app" or Path(arg).name == "draftset":
            argv = ["draftset", *argv[i + 1 :]]
            break
    text = redact(clean_text(" ".join(argv)))
    return (text[:120] + ("…" if len(text) > 120 else "")) or None


def describe_pid(pid: int) -> str:
    """`pid N (draftset ingest --repo a/b)`, or `pid N` when its command line cannot be read."""
    command = command_of(pid)
    return f"pid {pid} ({command})" if command else f"pid {pid}"


def lock_holder(path: Path) -> dict[str, Any] | None:
    """Who holds the catalog file's lock right now: {pid, command} (either may be None when DuckDB or /proc
    does not say), or None when nobody does."""
    if not Path(path).exists():
        return None
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.IOException as exc:
        pid = pid_in_lock_error(exc)
        return {"pid": pid, "command": command_of(pid) if pid is not None else None}
    except duckdb.Error:
        return None
    return None
