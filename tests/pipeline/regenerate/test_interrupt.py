"""Ctrl-C of `draftset regenerate` with hundreds of requests in flight: it stops in seconds, keeps what was
answered, records itself as interrupted (progress.json and the catalog), says so in one line, exits 130, and the
next run resumes by id. Replies keep arriving while the run is cancelled, as they do from a batching server: on
Python 3.11, asyncio.wait_for returned such a reply instead of raising, the worker went on taking rows, and the
process never exited (the H200 run: still running minutes after SIGINT)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
from regen_helpers import simple_mix, write_mix

from catalog import Catalog
from pipeline.regenerate.run import regen_dir

CLI = [sys.executable, "-m", "pipeline.cli.app"]
ROWS = 2500
STOP_WITHIN_S = 20.0  # a prompt stop takes a few seconds on a loaded 2-core machine; the bug never stopped


def _regenerate(url: str, *extra: str) -> list[str]:
    return [*CLI, "regenerate", "m", "--endpoint", url, "--concurrency", "300", "--flush-seconds", "0.2",
            "--no-progress", "--backoff", "0", *extra]  # fmt: skip


def _result_ids(out_dir) -> list[str]:
    return [
        i for p in out_dir.glob("results-*.parquet") for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()
    ]


def test_ctrl_c_with_requests_in_flight_stops_promptly_keeps_rows_and_resumes(home, fake_server):
    slow = fake_server(latency_s=0.3, keep_log=False)  # 300 in flight, answers arriving all the time
    convs = simple_mix(ROWS)
    write_mix(home, "m", convs, rows_per_shard=500)
    out_dir = regen_dir(home, "m")
    env = {**os.environ, "DRAFTSET_HOME": str(home), "COLUMNS": "300"}

    job = subprocess.Popen(_regenerate(slow.url), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while len(_result_ids(out_dir)) < 300:  # well under way: several rounds answered, 300 more in flight
        assert job.poll() is None, job.communicate()[1]
        assert time.monotonic() < deadline, "no rows answered in time"
        time.sleep(0.05)
    job.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, stderr = job.communicate(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        raise AssertionError(f"regenerate still running {STOP_WITHIN_S:g} s after Ctrl-C") from None
    took = time.monotonic() - sent
    assert job.returncode == 130, (job.returncode, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0].startswith("error: regenerate m interrupted (Ctrl-C)"), stderr
    assert lines[1].startswith("next: run `draftset regenerate m` again"), stderr
    kept = _result_ids(out_dir)
    assert 300 <= len(kept) < ROWS and len(set(kept)) == len(kept), (len(kept), took)
    assert f"{len(kept):,} results" in lines[0]
    progress = json.loads((out_dir / "progress.json").read_text())
    assert progress["state"] == "interrupted" and progress["results"] == len(kept)
    (run,) = Catalog(home).query("SELECT status, error FROM stage_runs WHERE stage = 'regenerate'")
    assert run["status"] == "interrupted" and "Ctrl-C" in run["error"]

    fast = fake_server(keep_log=False)  # the same model name: the rows resume, the abandoned ones are asked again
    again = subprocess.run(_regenerate(fast.url), env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    everything = _result_ids(out_dir)
    assert len(everything) == len(set(everything)) == ROWS and set(everything) == {c.id for c in convs}
    assert not (out_dir / "errors.jsonl").exists()
