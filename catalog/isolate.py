"""Run one call on untrusted data in a spawned child process with memory and time limits.

For library calls that may crash the interpreter (libarrow segfaults on hostile JSON) or eat the
machine's memory: the child dies, the caller gets one `DraftsetError`. Spawned, not forked, so the
child never inherits a parent's threads or locks. The function must be importable (module level).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from typing import Any

from catalog import limits
from catalog.errors import DraftsetError


def exit_with_parent(poll_s: float = 0.5) -> None:
    """In a worker process: exit as soon as the process that started it is gone (even by kill -9).

    A worker orphaned by a killed parent would otherwise live on under init, holding its memory; a
    watcher thread is used rather than PR_SET_PDEATHSIG because that fires when the parent *thread*
    that spawned us ends (a pool thread), not the parent process."""
    import os
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...], memory: int) -> None:
    import resource

    exit_with_parent()
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ValueError, OSError):
        pass
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        conn.send(("error", f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"))
    finally:
        conn.close()


def run_isolated(
    fn: Callable[..., Any],
    *args: Any,
    what: str,
    timeout_s: float = limits.MAX_REQUEST_S,
    memory: int = limits.MAX_WORKER_MEMORY,
) -> Any:
    """fn(*args) in a child; its result, or DraftsetError naming `what` (crash, limit, or its error)."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, memory), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            proc.kill()
            raise DraftsetError(f"{what} took longer than {timeout_s:g} s", hint="the data may be hostile or huge")
        status, value = parent.recv()
    except EOFError:  # the child died without answering: a signal (segfault) or the memory limit
        proc.join(5)
        code = proc.exitcode
        why = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit {code}"
        raise DraftsetError(
            f"{what} crashed ({why}) on this data", hint="the dataset's files are hostile or broken; reject the dataset"
        ) from None
    finally:
        parent.close()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
    if status == "error":
        raise DraftsetError(f"{what} failed: {value}")
    return value
