"""The local Hub's viewer workers never outlive it: SIGTERM, SIGINT, kill -9 of the server, and stopping a
Hub on a thread all leave no process behind (found by a marker in their environment, so orphans that
init adopted are found too)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from pipeline.servers.localhub import serve_in_thread
from pipeline.servers.localhub.isolated import READER

ROOT = Path(__file__).resolve().parents[4]
MARK = "DRAFTSET_LEAK_MARK"


@pytest.fixture()
def hub_dir(tmp_path) -> Path:
    data = tmp_path / "hub" / "lab" / "plain" / "data"
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    return tmp_path / "hub"


def marked(value: str) -> list[int]:
    """Live (not zombie) processes whose environment carries MARK=value."""
    found = []
    needle = f"{MARK}={value}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def _gone(value: str, timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := marked(value)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _first_rows(url: str) -> None:
    resp = httpx.get(
        f"{url}/viewer/first-rows", params={"dataset": "lab/plain", "config": "default", "split": "train"}, timeout=120
    )
    assert resp.status_code == 200, resp.text


@contextmanager
def _served(hub_dir: Path) -> Iterator[tuple[subprocess.Popen, str, str]]:
    """`draftset hub serve` in a child marked by a fresh MARK value; whatever it leaves is killed after."""
    from pipeline.servers.localhub.server import free_port

    value = uuid.uuid4().hex
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli.app", "hub", "serve", str(hub_dir), "--port", str(port), "-q"],
        cwd=ROOT,
        env={**os.environ, MARK: value},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc, value, f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in marked(value):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_a_stopped_hub_leaves_no_viewer_worker(hub_dir, how):
    with _served(hub_dir) as (proc, value, url):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(url + "/api/datasets", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        _first_rows(url)  # spawns the viewer's worker processes
        assert len(marked(value)) >= 2  # the server and at least one worker
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=30)
        assert _gone(value) == []


def test_stopping_the_last_hub_on_a_thread_ends_its_workers(hub_dir):
    from pipeline.servers.localhub import server

    others = set(server._RUNNING_HUBS)  # e.g. the session's fixture Hub, when an earlier test started it
    first, second = serve_in_thread(hub_dir), serve_in_thread(hub_dir)
    try:
        _first_rows(first.url)
        workers = list(getattr(READER._pool, "_processes", {}).values())
        assert workers and all(p.is_alive() for p in workers)
        first.stop()
        assert all(p.is_alive() for p in workers)  # the other Hub still uses the shared pool
    finally:
        first.stop()
        second.stop()
    assert all(p.is_alive() for p in workers) if others else not any(p.is_alive() for p in workers)


def test_a_hub_killed_while_its_workers_start_leaves_none_behind(hub_dir):
    """kill -9 of the server as soon as its first viewer worker exists, before that worker has imported
    anything: the worker is orphaned before it can start watching, and must still leave."""
    with _served(hub_dir) as (proc, value, _url):

        def workers() -> list[int]:
            found = []
            for pid in marked(value):
                try:
                    if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        found.append(pid)
                except OSError:  # gone meanwhile
                    pass
            return found

        deadline = time.monotonic() + 60
        while not workers() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert workers(), "the Hub started no viewer worker"
        proc.kill()
        proc.wait(timeout=30)
        assert _gone(value, timeout_s=30) == []


def test_a_worker_orphaned_before_it_watches_exits_at_once():
    code = "from catalog.isolate import exit_with_parent; exit_with_parent(1); import time; time.sleep(60)"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60)
    assert done.returncode == 1 and time.monotonic() - started < 30


def test_a_warm_up_that_starts_after_its_hub_stopped_spawns_no_worker():
    """warm_viewer's thread may get going only after a quick Hub's stop() closed the pool: it must not start
    a fresh pool then, whose workers no Hub would ever close (they lived until the process ended)."""
    from pipeline.servers.localhub.isolated import IsolatedReader

    reader = IsolatedReader(workers=1)
    closes = reader.closes  # read when the Hub started, as warm_viewer does
    reader.close()  # the Hub stopped before its warm-up thread ran
    reader.warm(closes)
    assert reader._pool is None
    reader.warm(reader.closes)  # a Hub started since: its warm-up does start the workers
    try:
        workers = list(getattr(reader._pool, "_processes", {}).values())
        assert workers and all(p.is_alive() for p in workers)
    finally:
        reader.close()
    # close() kills them and joins each for up to 5 s; on a loaded 2-core machine a killed worker can take a
    # moment longer to be reaped (a full-suite run saw one alive right after close): it must be gone soon after.
    deadline = time.monotonic() + 20
    while any(p.is_alive() for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(p.is_alive() for p in workers)
