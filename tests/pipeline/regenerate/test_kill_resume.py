"""Must-show: `draftset regenerate` against the real dev server, killed with SIGKILL mid-way and
restarted, ends with results + errors + skipped == input and no id twice; `draftset status` reads
the running job from another process."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
from regen_helpers import conversation, simple_mix, write_mix

from adapters.records import Conversation
from pipeline.regenerate.run import regen_dir

CLI = [sys.executable, "-m", "pipeline.cli.app"]


def _regenerate(url: str, *extra: str) -> list[str]:
    return [
        *CLI,
        "regenerate",
        "m",
        "--endpoint",
        url,
        "--max-tokens",
        "6",
        "--concurrency",
        "2",
        "--flush-rows",
        "2",
        "--no-progress",
        "--seed",
        "7",
        "--include-length-truncated",
        *extra,
    ]  # 6 tokens rarely finish a toy answer: keep them


def _ids(out_dir):
    results = [
        i
        for p in sorted(out_dir.glob("results-*.parquet"))
        for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()
    ]

    def journal(n):
        return [json.loads(x)["id"] for x in (out_dir / n).read_text().splitlines()] if (out_dir / n).exists() else []

    return results, journal("errors.jsonl"), journal("skipped.jsonl")


def test_killed_run_resumes_by_id_with_every_row_accounted_once(home, devserver_url):
    convs = simple_mix(30)
    convs[4] = conversation(4, [("user", "hello there"), ("assistant", "x"), ("user", "and then?"), ("assistant", "y")])
    convs[9] = conversation(9, [("system", "no user turn here")])  # -> skipped.jsonl (empty_prompt)
    write_mix(home, "m", convs, rows_per_shard=8)
    out_dir = regen_dir(home, "m")
    env = {**os.environ, "DRAFTSET_HOME": str(home), "COLUMNS": "200"}

    job = subprocess.Popen(_regenerate(devserver_url), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while len(list(out_dir.glob("results-*.parquet"))) < 2 or not (out_dir / "progress.json").exists():
        assert job.poll() is None, job.stderr.read().decode()
        assert time.monotonic() < deadline, "no shard written in time"
        time.sleep(0.05)
    job.send_signal(signal.SIGSTOP)  # frozen mid-run (still alive): status must see it running, whatever the load
    status = subprocess.run([*CLI, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert "regeneration jobs" in status.stdout and "running" in status.stdout and "/30" in status.stdout, status.stdout
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=30)
    results, errors, skipped = _ids(out_dir)
    assert 0 < len(results) + len(errors) + len(skipped) < 30, "kill must land mid-way"
    after_kill = subprocess.run([*CLI, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert "process gone" in after_kill.stdout.replace("\n", " ")

    again = subprocess.run(_regenerate(devserver_url), env=env, capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr
    results, errors, skipped = _ids(out_dir)
    everything = results + errors + skipped
    assert len(everything) == len(set(everything)) == 30
    assert set(everything) == {c.id for c in convs}
    assert convs[9].id in skipped and not errors
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["complete"] and sum(manifest["totals"].values()) == 30
    rows = {r["id"]: r for p in out_dir.glob("results-*.parquet") for r in pq.read_table(p).to_pylist()}
    multi = Conversation.model_validate_json(rows[convs[4].id]["conversation"])
    assert [m.role for m in multi.messages] == ["user", "assistant", "user", "assistant"]
    assert all(m.content not in ("x", "y") for m in multi.messages)  # the target's answers, not the dataset's
    assert {r["model"] for r in rows.values()} == {"toy-target"}
    assert all(t["finish_reason"] in ("stop", "length") for r in rows.values() for t in json.loads(r["turns"]))


def test_repeated_kills_at_random_moments_never_lose_or_double_an_id(home, fake_server):
    """kill -9 three times at random points (mid shard write, mid journal append, ...), then finish."""
    # 50 ms per reply at concurrency 3 keeps each cycle (10 rows + up to 0.3 s) well short of 150 rows.
    server = fake_server(latency_s=0.05, fail_marker="FAILME", length_marker="CUTME")
    marks = {i: " FAILME" for i in range(0, 150, 11)} | {i: " CUTME" for i in range(5, 150, 13)}
    convs = simple_mix(150, native_every=17, marker_rows=marks)
    write_mix(home, "m", convs, rows_per_shard=40)
    out_dir = regen_dir(home, "m")
    env = {**os.environ, "DRAFTSET_HOME": str(home)}
    command = [
        *CLI,
        "regenerate",
        "m",
        "--endpoint",
        server.url,
        "--no-progress",
        "--flush-rows",
        "3",
        "--concurrency",
        "3",
        "--max-attempts",
        "2",
        "--backoff",
        "0",
    ]
    rng = random.Random(5)
    for _ in range(3):
        before = sum(map(len, _ids(out_dir)))
        job = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while sum(map(len, _ids(out_dir))) < before + 10:
            if job.poll() is not None:  # finished before we could kill it: must have succeeded
                assert job.returncode == 0, job.stderr.read().decode()
                break
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.3))
        job.kill()
        job.wait(timeout=30)
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert final.returncode == 0, final.stderr
    results, errors, skipped = _ids(out_dir)
    everything = results + errors + skipped
    assert len(everything) == len(set(everything)) == 150
    assert set(errors) == {convs[i].id for i in marks if marks[i] == " FAILME" and i % 17}
    assert set(skipped) == {convs[i].id for i in marks if marks[i] == " CUTME" and i % 17}
