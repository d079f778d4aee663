"""`draftset regenerate --shard I/N`: N workers split one mix by sha1(id) mod N, each in its own folder.

Run as real `draftset regenerate` subprocesses against the fake OpenAI server (tests/kits/fake_openai.py)
over loopback: three shards at once, one killed with SIGKILL and restarted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
from regen_helpers import simple_mix, write_mix
from test_kill_resume import _ids

from catalog.errors import DraftsetError
from pipeline.build.inputs import resolve_input
from pipeline.regenerate.config import RegenConfig, load_config
from pipeline.regenerate.run import regen_dir, run_regenerate
from pipeline.regenerate.sharding import shard_of

CLI = [sys.executable, "-m", "pipeline.cli.app"]
N_ROWS, N_SHARDS = 90, 3


def _command(url: str, shard: str) -> list[str]:
    return [
        *CLI,
        "regenerate",
        "m",
        "--endpoint",
        url,
        "--no-progress",
        "--flush-rows",
        "3",
        "--concurrency",
        "2",
        "--max-attempts",
        "2",
        "--backoff",
        "0",
        "--shard",
        shard,
    ]


def _files(folder):
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def _row_number(request: dict) -> int:
    return int(re.search(r"question number (\d+):", request["messages"][-1]["content"])[1])


def test_three_shards_at_once_one_killed_and_restarted_cover_the_mix_once(home, fake_server):
    server = fake_server(latency_s=0.1, fail_marker="FAILME", length_marker="CUTME")
    marks = {i: " FAILME" for i in range(1, N_ROWS, 11)} | {i: " CUTME" for i in range(6, N_ROWS, 13)}
    convs = simple_mix(N_ROWS, native_every=10, marker_rows=marks)
    write_mix(home, "m", convs, rows_per_shard=25)
    owner = {c.id: shard_of(c.id, N_SHARDS) for c in convs}
    assert set(owner.values()) == set(range(N_SHARDS))  # the hash spreads this mix over every shard
    mix_dir = regen_dir(home, "m")
    folder = {i: mix_dir / f"shard-{i}-of-{N_SHARDS}" for i in range(N_SHARDS)}
    env = {**os.environ, "DRAFTSET_HOME": str(home), "COLUMNS": "200"}

    jobs = {
        i: subprocess.Popen(
            _command(server.url, f"{i}/{N_SHARDS}"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for i in range(N_SHARDS)
    }
    deadline = time.monotonic() + 60
    while sum(map(len, _ids(folder[1]))) < 5:
        assert jobs[1].poll() is None, f"shard 1 ended before the kill: {jobs[1].stderr.read()}"
        assert time.monotonic() < deadline, "shard 1 wrote nothing in time"
        time.sleep(0.02)
    jobs[1].kill()  # SIGKILL
    jobs[1].wait(timeout=30)
    for i in (0, 2):
        out, err = jobs[i].communicate(timeout=120)
        assert jobs[i].returncode == 0, err
        assert "shards complete (run the others to finish)" in out
    assert not json.loads((mix_dir / "manifest.json").read_text())["complete"]  # shard 1 is unfinished

    before = {i: _files(folder[i]) for i in (0, 2)}
    done_before = set().union(*map(set, _ids(folder[1])))
    assert 0 < len(done_before) < sum(1 for s in owner.values() if s == 1), "the kill must land mid-way"
    asked_before = len(server.behaviour.log)
    again = subprocess.run(_command(server.url, f"1/{N_SHARDS}"), env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "all done" in again.stdout

    # the restart asked only for shard 1's rows that were not recorded yet, and left the others' files alone
    asked_again = {convs[_row_number(r)].id for r in server.behaviour.log[asked_before:]}
    assert asked_again and {owner[i] for i in asked_again} == {1} and not asked_again & done_before
    assert {i: _files(folder[i]) for i in (0, 2)} == before

    everything = []
    for i in range(N_SHARDS):
        results, errors, skipped = _ids(folder[i])
        assert {owner[x] for x in results + errors + skipped} == {i}, f"an id of another shard in shard {i}"
        everything += results + errors + skipped
    assert len(everything) == len(set(everything)) == N_ROWS and set(everything) == set(owner)
    failed = [i for i in marks if marks[i] == " FAILME" and i % 10]
    assert sorted(e for i in range(N_SHARDS) for e in _ids(folder[i])[1]) == sorted(convs[i].id for i in failed)

    manifest = json.loads((mix_dir / "manifest.json").read_text())
    assert manifest["complete"] and manifest["shards"] == N_SHARDS and manifest["input_rows"] == N_ROWS
    assert sum(manifest["totals"].values()) == N_ROWS and all(m["complete"] for m in manifest["per_shard"].values())

    # build reads every shard's results, and the settings and completeness the shards recorded
    build_input = resolve_input(home, "m")
    results = {x for i in range(N_SHARDS) for x in _ids(folder[i])[0]}
    built = [r["id"] for r in build_input.rows()]
    assert build_input.kind == "regen" and len(built) == len(set(built)) and set(built) == results
    assert build_input.stage_value("complete", "manifest.json") is True
    assert build_input.stage_value("thinking") is True

    status = subprocess.run([*CLI, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    jobs_table = status.stdout.split("recent stage runs")[0]
    for i in range(N_SHARDS):
        assert re.search(rf"{i}/{N_SHARDS}\s.*finished", jobs_table), status.stdout


def _config(url: str, shard: str | None, **extra) -> RegenConfig:
    return load_config(
        None,
        mix="m",
        endpoints=[url],
        shard=shard,
        flush_rows=5,
        partitions=[{"name": "all", "concurrency": 4, "max_tokens": 16}],
        **extra,
    )


def test_a_different_shard_count_or_settings_is_refused(home, fake_server):
    server = fake_server()
    convs = simple_mix(20)
    write_mix(home, "m", convs)
    first = run_regenerate(_config(server.url, "0/2"), home, show_progress=False)
    mine = {c.id for c in convs if shard_of(c.id, 2) == 0}
    assert first.input_rows == len(mine) and first.totals["results"] == len(mine)
    assert first.mix_manifest and not first.mix_manifest["complete"]  # shard 1/2 has not run

    for other in ("1/3", None, "0/1"):
        with pytest.raises(DraftsetError, match=r"was regenerated as 2 shards;.* would assign ids") as refused:
            run_regenerate(_config(server.url, other), home, show_progress=False)
        assert "--shard I/2" in refused.value.hint
    with pytest.raises(DraftsetError, match=r"shard-0-of-2 already holds rows generated with other settings"):
        run_regenerate(_config(server.url, "1/2", temperature=0.1), home, show_progress=False)
    assert not (regen_dir(home, "m") / "shard-0-of-3").exists()

    second = run_regenerate(_config(server.url, "1/2"), home, show_progress=False)
    assert second.input_rows == 20 - len(mine) and second.mix_manifest["complete"]


def test_an_unsharded_mix_refuses_shards_and_bad_shard_specs_are_clear(home, fake_server):
    server = fake_server()
    write_mix(home, "m", simple_mix(6))
    run_regenerate(_config(server.url, None), home, show_progress=False)
    with pytest.raises(DraftsetError, match=r"was regenerated as the whole mix \(no --shard\); --shard 0/2"):
        run_regenerate(_config(server.url, "0/2"), home, show_progress=False)
    for bad, said in (("2/2", "shard index 2 must be below"), ("x", "shard must look like I/N")):
        with pytest.raises(DraftsetError, match=said):
            _config(server.url, bad)
