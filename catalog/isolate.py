"""Run one call on untrusted data in a child process with memory and time limits (`run_isolated`), or
stream a generator's items out of one (`stream_isolated`: untrusted data files, decoded under the cap).

For library calls that may crash the interpreter (libarrow segfaults on hostile JSON) or eat the
machine's memory: the child dies, the caller gets one `DraftsetError`. Spawned, not forked, so the
child never inherits a parent's threads or locks. The function must be importable (module level).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from catalog import limits
from catalog.errors import DraftsetError


def exit_with_parent(parent: int | None = None, poll_s: float = 0.5) -> None:
    """In a worker process: exit as soon as the process that started it is gone (even by kill -9).

    A worker orphaned by a killed parent would otherwise live on under init, holding its memory; a
    watcher thread is used rather than PR_SET_PDEATHSIG because that fires when the parent *thread*
    that spawned us ends (a pool thread), not the parent process. `parent` is the pid the parent passed
    down: a spawned child takes seconds to import before it gets here, and a parent killed meanwhile
    would make os.getppid() already name init (or a subreaper), which the watcher would then wait on
    forever."""
    import os
    import threading
    import time

    if parent is None:
        parent = os.getppid()
    elif os.getppid() != parent:  # orphaned before we could watch
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def enter_child(memory: int, parent: int | None = None) -> None:
    """What every capped child does first: end with its parent, then cap its address space."""
    import resource

    exit_with_parent(parent)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ValueError, OSError):
        pass


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def exit_reason(code: int | None) -> str:
    """How a child ended, from its exit code: `signal SIGKILL`, `exit 1`."""
    return f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit {code}"


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...], memory: int, parent: int) -> None:
    enter_child(memory, parent)
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        conn.send(("error", one_line(exc)))
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
    proc = ctx.Process(target=_child, args=(child, fn, args, memory, os.getpid()), daemon=True)
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
        why = exit_reason(code)
        raise DraftsetError(
            f"{what} crashed ({why}) on this data", hint="the dataset's files are hostile or broken; reject the dataset"
        ) from None
    finally:
        parent.close()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
    if status == "error":
        if str(value).startswith("MemoryError"):
            raise DraftsetError(
                f"{what} ran out of its {memory // 2**20:,} MiB memory limit",
                hint="the dataset's files decode to more than the limit (a compression bomb?); reject the dataset",
            )
        raise DraftsetError(f"{what} failed: {value}")
    return value


# -- streaming: a generator's items from a capped child, chunk by chunk ------------------------------
CHUNK_ITEMS = 256
CHUNK_BYTES = 4 * 1024 * 1024  # pickled bytes per message: what the parent holds of one child at once


class OverBudget(DraftsetError):
    """The child's items passed `max_bytes` (pickled): `total` bytes so far."""

    def __init__(self, message: str, total: int):
        super().__init__(message)
        self.total = total


class TimedOut(DraftsetError):
    """The child was killed for time: silent for `limit_s` (`idle`), or past its wall-clock deadline."""

    def __init__(self, message: str, limit_s: float, idle: bool):
        super().__init__(message, hint="the data may be hostile or huge")
        self.limit_s, self.idle = limit_s, idle


class ChildDied(DraftsetError):
    """The child ended without finishing (a signal, the memory limit): `why` says which."""

    def __init__(self, message: str, why: str, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.why = why


_CONTEXT: Any = None
_CONTEXT_GUARD = threading.Lock()


def _main_modules() -> list[str]:
    """The modules this process's `__main__` took its names from (`draftset`'s script: pipeline.cli.app;
    `python -m pipeline.cli.app`: typer, pipeline.cli.common, ...), never the main module itself.

    Every forkserver child re-runs `__main__` as `__mp_main__` before it unpickles its function (Python
    3.11's forkserver never preloads a main given by path); with these already imported by the server,
    that re-run finds its imports done (CLI: ~0.5 s -> ~0.05 s per child), and the child is the same.
    (Preloading a `-m` main itself would make runpy warn in every child that it is already imported.)"""
    import sys
    from types import ModuleType

    main = sys.modules.get("__main__")
    own = {"__main__", "builtins", getattr(getattr(main, "__spec__", None), "name", None)}
    if main is None or any(str(n).endswith(".__main__") for n in own):  # pytest's: multiprocessing skips it
        return []
    found = {
        v.__name__ if isinstance(v, ModuleType) else getattr(v, "__module__", None)
        for k, v in vars(main).items()
        if not k.startswith("__") and (callable(v) or isinstance(v, ModuleType))
    }
    return sorted(m for m in found if isinstance(m, str) and m not in own)


def forkserver(preload: tuple[str, ...]) -> Any:
    """A forkserver context: each child forks from one single-threaded server that imported `preload`
    (and what `__main__` is made of) once (pyarrow: a second), so a child costs milliseconds, and never
    inherits this process's threads. Every caller's `preload` joins the list the server imports when it
    starts (a server already running keeps its own; a child then imports the rest itself)."""
    global _CONTEXT
    with _CONTEXT_GUARD:
        if _CONTEXT is None:
            _CONTEXT = multiprocessing.get_context("forkserver")
        wanted = list(dict.fromkeys([*_PRELOADED, *preload, *_main_modules()]))
        if wanted != _PRELOADED:
            _PRELOADED[:] = wanted
            _CONTEXT.set_forkserver_preload(wanted)
        return _CONTEXT


_PRELOADED: list[str] = []


def _stream_child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...], memory: int, max_bytes: int | None) -> None:
    import pickle

    enter_child(memory)
    try:
        chunk: list[bytes] = []
        size = total = 0
        for item in fn(*args):
            data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            total += len(data)
            if max_bytes is not None and total > max_bytes:
                conn.send(("items", chunk))
                conn.send(("over", total))
                return
            chunk.append(data)
            size += len(data)
            if len(chunk) >= CHUNK_ITEMS or size >= CHUNK_BYTES:
                conn.send(("items", chunk))
                chunk, size = [], 0
        conn.send(("items", chunk))
        conn.send(("done", None))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        conn.send(("error", one_line(exc)))
    finally:
        conn.close()


# -- a bound on every child one thread waits on: a request's deadline, its client gone ------------------
_BOUND = threading.local()
BOUND_POLL_S = 0.2


class Bound:
    """What `bounded` watches; `stopped` says why it stopped a child (None: it did not)."""

    def __init__(self, deadline_s: float, cancelled: Callable[[], str | None]):
        self.deadline_s, self.cancelled = deadline_s, cancelled
        self.until = time.monotonic() + deadline_s
        self.stopped: str | None = None

    def check(self, what: str) -> None:
        why = self.cancelled() or (
            f"it passed its {self.deadline_s:g} s limit" if time.monotonic() >= self.until else None
        )
        if why is not None:
            self.stopped = self.stopped or why
            raise TimedOut(f"{what} stopped: {why}", self.deadline_s, idle=False)


@contextmanager
def bounded(deadline_s: float, cancelled: Callable[[], str | None] = lambda: None) -> Iterator[Bound]:
    """Every capped child this thread waits on inside the block is killed once `deadline_s` has passed or
    `cancelled()` names a reason (checked every BOUND_POLL_S): a request's read of untrusted files ends with
    the request, whatever per-file limits would still allow. The child's reader sees TimedOut."""
    bound = Bound(deadline_s, cancelled)
    previous, _BOUND.value = getattr(_BOUND, "value", None), bound
    try:
        yield bound
    finally:
        _BOUND.value = previous


def current_bound() -> Bound | None:
    return getattr(_BOUND, "value", None)


def _poll(conn: Any, wait: float, what: str) -> bool:
    """conn.poll(wait), in slices when this thread is bounded (the bound raises TimedOut)."""
    bound = current_bound()
    if bound is None:
        return bool(conn.poll(wait))
    end = time.monotonic() + wait
    while True:
        bound.check(what)
        left = end - time.monotonic()
        if left <= 0:
            return False
        if conn.poll(min(left, BOUND_POLL_S)):
            return True


def stream_isolated(
    fn: Callable[..., Iterator[Any]],
    *args: Any,
    what: str,
    idle_timeout_s: float = limits.MAX_REQUEST_S,
    memory: int = limits.MAX_WORKER_MEMORY,
    preload: tuple[str, ...] = (),
    max_bytes: int | None = None,
    deadline_s: float | None = None,
) -> Iterator[Any]:
    """The items of the generator fn(*args), run in a child capped at `memory` of address space, in
    chunks of at most CHUNK_ITEMS items / CHUNK_BYTES bytes. A child silent for `idle_timeout_s` is
    killed (TimedOut, idle); a child that has kept this side waiting `deadline_s` in all is killed (TimedOut:
    a wall clock on its work, so a child that keeps sending, or keeps working on input that gives nothing,
    is bounded too; a slow caller's own time per item is not counted); a child that dies is
    ChildDied; items past `max_bytes` in all are OverBudget; its own error is a DraftsetError. Closing the
    generator early (a limit reached) kills the child."""
    import pickle

    ctx = forkserver(preload)
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_stream_child, args=(child, fn, args, memory, max_bytes), daemon=True)
    proc.start()
    child.close()
    finished = False
    spent = 0.0  # seconds spent waiting on the child: its work, not the time the caller takes per item
    try:
        while True:
            wait = idle_timeout_s if deadline_s is None else min(idle_timeout_s, deadline_s - spent)
            started = time.monotonic()
            ready = _poll(parent, max(0.0, wait), what)
            spent += time.monotonic() - started
            if not ready:
                if deadline_s is not None and spent >= deadline_s:
                    raise TimedOut(f"{what} passed its {deadline_s:g} s limit", deadline_s, idle=False)
                raise TimedOut(f"{what} made no progress for {idle_timeout_s:g} s", idle_timeout_s, idle=True)
            try:
                started = time.monotonic()
                kind, payload = parent.recv()
                spent += time.monotonic() - started
            except EOFError:
                proc.join(5)
                code = proc.exitcode
                why = exit_reason(code)
                raise ChildDied(f"{what} crashed ({why})", why) from None
            if kind == "items":
                for data in payload:
                    yield pickle.loads(data)
                if deadline_s is not None and spent >= deadline_s:  # a child that keeps sending
                    raise TimedOut(f"{what} passed its {deadline_s:g} s limit", deadline_s, idle=False)
            elif kind == "done":
                finished = True
                return
            elif kind == "over":
                raise OverBudget(f"{what} gave more than {max_bytes:,} bytes", payload)
            else:
                raise DraftsetError(f"{what} failed: {payload}")
    finally:
        parent.close()
        if finished:  # it is exiting on its own: not waited for (multiprocessing reaps it at the next start)
            proc.join(0)
        else:
            if proc.is_alive():
                proc.kill()
            proc.join(5)
