"""Previews read untrusted files under their request's bound: a deadline of their own, the client leaving,
and threads of their own, with a named refusal; the capped child doing the read is killed, not left."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import anyio
import pytest
from starlette.concurrency import run_in_threadpool

from catalog.isolate import TimedOut, bounded, stream_isolated
from pipeline.servers.service.auth import ApiError
from pipeline.servers.service.previewgate import PreviewGate

PIDS: list[int] = []


def _silent(pid_file: str) -> Iterator[int]:
    """A reader that never gives a row (a compressed file of empty lines, for the parent)."""
    with open(pid_file, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
    yield 1


def _read_silent(pid_file: str) -> list[int]:
    """What a preview does: drain a capped child's rows (here none, ever)."""
    try:
        return list(stream_isolated(_silent, pid_file, what="reading x", idle_timeout_s=300))
    except TimedOut:
        return []  # capped.iter_file turns this into a refusal row, and the preview goes on


def _gone(pid_file, timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid = int(pid_file.read_text())
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return True
        except (ProcessLookupError, FileNotFoundError, ValueError):
            return True
        time.sleep(0.05)
    return False


class FakeRequest:
    def __init__(self, leaves_after_s: float | None = None):
        self.start, self.leaves_after_s = time.monotonic(), leaves_after_s

    async def is_disconnected(self) -> bool:
        return self.leaves_after_s is not None and time.monotonic() - self.start > self.leaves_after_s


def test_a_bound_kills_the_child_a_thread_waits_on_at_its_deadline(tmp_path):
    pid_file = tmp_path / "pid"
    t0 = time.monotonic()
    with bounded(0.8) as bound, pytest.raises(TimedOut):
        list(stream_isolated(_silent, str(pid_file), what="reading x", idle_timeout_s=300))
    assert time.monotonic() - t0 < 2.0 and bound.stopped == "it passed its 0.8 s limit"
    assert _gone(pid_file)


@pytest.mark.parametrize("leaves", [None, 0.3])
def test_a_preview_stops_at_its_deadline_or_when_its_client_leaves_with_a_named_refusal(tmp_path, leaves):
    pid_file = tmp_path / "pid"
    gate = PreviewGate(slots=2, deadline_s=1.0)

    async def main() -> tuple[ApiError, float]:
        t0 = time.monotonic()
        with pytest.raises(ApiError) as caught:
            await gate.run(FakeRequest(leaves), _read_silent, str(pid_file))  # type: ignore[arg-type]
        return caught.value, time.monotonic() - t0

    error, took = anyio.run(main)
    assert error.status == 504 and error.error.startswith("preview stopped: ")
    if leaves is None:
        assert "it passed its 1 s limit" in error.error and took < 2.0
    else:
        assert "the client disconnected" in error.error and took < 0.9
    assert _gone(pid_file)


def test_busy_previews_leave_every_other_page_its_threads_and_a_third_gets_a_named_503(tmp_path):
    gate = PreviewGate(slots=2, deadline_s=1.5)

    async def main() -> tuple[list[str], float]:
        results: list[str] = []

        async def preview(i: int) -> None:
            try:
                await gate.run(FakeRequest(), _read_silent, str(tmp_path / f"pid{i}"))  # type: ignore[arg-type]
            except ApiError as exc:
                results.append(f"{exc.status} {exc.error}")

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(preview, i)
            await anyio.sleep(0.3)
            t0 = time.monotonic()
            await run_in_threadpool(threading.get_ident)  # another page's work: not behind the previews
            other = time.monotonic() - t0
        return results, other

    results, other = anyio.run(main)
    assert other < 0.2
    assert sorted(r[:3] for r in results) == ["503", "504", "504"], results
    assert any("every preview slot (2) stayed busy" in r for r in results)
