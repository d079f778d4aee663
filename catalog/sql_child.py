"""One read of the catalog in a capped child: a user's SQL statement, under limits it cannot escape.

In-process, DuckDB bounds a statement only between its operators: one function call (repeat('x', 2e9),
string_agg over a huge range, list_sum(range(1e8))) runs seconds past interrupt() and allocates gigabytes
past memory_limit. Here the statement runs in a forked child (catalog/isolate.py's forkserver) on a
snapshot of the catalog (catalog/sql_snapshot.py): its address space is capped (an allocation past it
is DuckDB's "Out of Memory", or the child dies), and the `Watch` that bounds it kills the child at its
time limit, when its client leaves, or at shutdown. Whatever the statement does, the service's own
database instance never runs it, so the next request is answered as before.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from catalog import errors, isolate, limits
from catalog.db import Catalog
from catalog.errors import DraftsetError, QueryStopped
from catalog.sql import Watch, out_of_memory, stopped
from catalog.sql_snapshot import Snapshots


class _Child:
    """What a Watch interrupts: the child process (killed; it holds nothing the service needs)."""

    def __init__(self, proc: Any):
        self.proc = proc

    def interrupt(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()


def _child(conn: Any, fn: Callable[..., Any], home: str, args: tuple[Any, ...], memory: int) -> None:
    # The cap is on what the statement adds: a child forked from a forkserver that imported pyarrow and
    # datasets for the decoders starts with more mapped than one that imported duckdb alone.
    isolate.enter_child(_mapped_bytes() + memory)  # its parent is the forkserver, which ends with the service
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # DuckDB draws its progress bar on stderr, into the service's log; errors come back by pipe
    try:
        catalog = Catalog(home, read_settings={"memory_limit": limits.SQL_DUCKDB_MEMORY, "threads": 1})
        conn.send(("ok", fn(catalog, *args)))
    except MemoryError:  # Python's own allocation past the cap (DuckDB's is its OutOfMemoryException)
        conn.send(("memory", None))
    except DraftsetError as exc:
        extra = (
            {"timed_out": exc.timed_out, "out_of_memory": exc.out_of_memory} if isinstance(exc, QueryStopped) else {}
        )
        conn.send(("error", (type(exc).__name__, str(exc), exc.hint, extra)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        conn.send(("error", ("DraftsetError", f"query failed: {isolate.one_line(exc)}", None, {})))
    finally:
        conn.close()


def _mapped_bytes() -> int:
    """This process's address space now (VmSize), 0 when /proc cannot say."""
    try:
        for line in open("/proc/self/status", encoding="ascii"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _rebuild(name: str, message: str, hint: str | None, extra: dict[str, bool]) -> DraftsetError:
    """The child's error as the same kind here (its http status follows the kind); unknown kinds: DraftsetError."""
    if name == "QueryStopped":
        return QueryStopped(message, hint, **extra)
    kind = getattr(errors, name, None)
    if isinstance(kind, type) and issubclass(kind, DraftsetError) and kind.__init__ is DraftsetError.__init__:
        return kind(message, hint=hint)
    return DraftsetError(message, hint=hint)


def run_in_child(
    snapshots: Snapshots,
    fn: Callable[..., Any],
    *args: Any,
    watch: Watch,
    memory: int = limits.MAX_SQL_WORKER_MEMORY,
    preload: tuple[str, ...] = (),
) -> Any:
    """fn(catalog, *args) in a child capped at `memory`, on a snapshot of the catalog taken now; its
    result, or the DraftsetError it raised (same kind), or QueryStopped when `watch` stopped it or the
    child ran out of memory. `fn` must be importable (module level) and its result picklable."""
    ctx = isolate.forkserver(("duckdb", "catalog.db", *preload))
    cap = f"{memory // 2**20:,} MiB"
    with snapshots.lease() as home:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, fn, str(home), args, memory), daemon=True)
        try:
            with watch.running(_Child(proc)):
                proc.start()
                if watch.why is not None:  # stopped while it started: interrupt() found nothing to kill yet
                    proc.kill()
                child.close()
                try:
                    status, value = parent.recv()  # the watch's kill ends this wait (EOF)
                except (EOFError, OSError):
                    proc.join(5)
                    if watch.why is not None:
                        raise stopped(watch) from None
                    code = proc.exitcode
                    if code is not None and -code in (signal.SIGABRT, signal.SIGSEGV, signal.SIGKILL):
                        # an allocation past the cap where nothing could turn it into an error
                        raise out_of_memory(f"{cap}; its process ended by {isolate.exit_reason(code)}") from None
                    raise DraftsetError(f"query failed: its process ended ({isolate.exit_reason(code)})") from None
        finally:
            parent.close()
            child.close()
            if proc.pid is not None:
                if proc.is_alive():
                    proc.kill()
                proc.join(5)
    if status == "ok":  # an answer that came as the watch fired is still the answer
        return value
    if status == "memory":
        raise out_of_memory(cap)
    raise _rebuild(*value)
