"""Hostile rows through a real ingest (local Hub, real catalog): every bad line quarantined with its true
file and line, counts adding up, quarantine written once per row across resumes, the per-dataset lock,
and runs whose process died shown as `interrupted`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.liveness import mark_interrupted, run_lock
from catalog.shards import iter_rows
from pipeline.ingest.run import ingest_dataset
from tests.kits.adapters import approve_on_hub, make_spec


def _good(i: int) -> bytes:
    return json.dumps(
        {"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]}
    ).encode()


DEEP = b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
DEEP_STRING = json.dumps({"messages": "[" * 5000 + "]" * 5000}).encode()  # a JSON-string field, decoded later
HOSTILE = {  # line number (1-based) → (bytes, quarantine reason)
    2: (b'{"messages": [{"role": "user", "content": "bad \xff\xfe byte"}]}', "invalid_utf8"),
    4: (b'{"messages": [{"role": "user", "content": "\\ud800 lone"}]}', "lone_surrogate"),
    6: (b'{"n": ' + b"9" * 5000 + b', "messages": []}', "huge_int"),
    8: (DEEP, "too_deep"),
    10: (b'{"messages": [', "malformed"),
}


def _lines() -> list[bytes]:
    lines = [_good(i) for i in range(12)]
    for number, (raw, _) in HOSTILE.items():
        lines[number - 1] = raw
    return lines


@pytest.fixture()
def hostile_hub(tmp_path):
    from pipeline.servers.localhub.server import serve_in_thread

    root = tmp_path / "hub"
    folder = root / "lab" / "hostile" / "data"
    folder.mkdir(parents=True)
    (root / "lab" / "hostile" / "README.md").write_text("---\nlicense: mit\n---\n# hostile\n")
    (folder / "train.jsonl").write_bytes(b"\n".join(_lines()) + b"\n")
    running = serve_in_thread(root, host="127.0.0.1", port=0)
    yield running.url
    running.stop()


def _approve(cat: Catalog, url: str, **fields: Any) -> None:
    approve_on_hub(cat, url, "lab/hostile", "hostile on purpose", **fields)


def test_every_hostile_line_is_quarantined_with_its_true_line_and_counts_add_up(home, hostile_hub):
    cat = Catalog(home)
    _approve(cat, hostile_hub)
    result = ingest_dataset(cat, home, "lab/hostile", endpoint=hostile_hub)
    counts = result.counts
    dropped = sum(v for k, v in counts.items() if k.startswith("dropped_"))
    assert counts["in"] == 12 and counts["out"] == 7 and counts["in"] == counts["out"] + dropped
    out = Home(home).normalized("lab/hostile")
    entries = [json.loads(x) for x in (out / "quarantine.jsonl").read_text().splitlines()]
    assert {e["line"]: e["reason"] for e in entries} == {n: r for n, (_, r) in HOSTILE.items()}
    assert all(e["file"] == "data/train.jsonl" and e["row_index"] == e["line"] - 1 for e in entries)
    assert sorted(r["row_index"] for r in iter_rows([out], columns=["row_index"])) == [0, 2, 4, 6, 8, 10, 11]

    # Resumed twice: the same bad rows are counted again but written to the quarantine once.
    for _ in range(2):
        again = ingest_dataset(cat, home, "lab/hostile", endpoint=hostile_hub)
        assert again.counts["skipped_already_written"] == 7
    assert len((out / "quarantine.jsonl").read_text().splitlines()) == len(HOSTILE)


def test_deep_json_string_field_is_a_row_error_not_a_recursion_error(home, tmp_path):
    from adapters.map.apply import RowError, apply_row

    spec = make_spec(
        repo_id="lab/x",
        revision="r" * 40,
        data_files=("a.jsonl",),
        json_fields=["messages"],
        role_map={"user": "user"},
        category="general chat",
    )
    with pytest.raises(RowError, match="nested 5,000 deep"):
        apply_row(spec, 0, json.loads(DEEP_STRING))


def test_second_ingest_of_one_dataset_is_refused_while_the_first_holds_the_lock(tmp_path):
    lock = tmp_path / ".lab__x.lock"
    code = f"from catalog.liveness import run_lock\nimport time\nwith run_lock(__import__('pathlib').Path({str(lock)!r}), 'x'):\n    print('held', flush=True)\n    time.sleep(30)\n"
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()}
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(DraftsetError, match="ingest of lab/x is already running"):
            with run_lock(lock, "ingest of lab/x"):
                pass
    finally:
        holder.kill()
        holder.wait()
    with run_lock(lock, "ingest of lab/x"):  # the kernel released it with the dead process
        pass


def test_a_run_whose_process_died_shows_as_interrupted(home):
    cat = Catalog(home)
    dead = subprocess.run(
        [sys.executable, "-c", "from catalog.liveness import owner; print(owner())"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    ).stdout.strip()
    from catalog.liveness import owner

    cat.upsert(
        "stage_runs",
        [
            {"run_id": "ingest-dead", "stage": "ingest", "status": "running", "owner": dead},
            {"run_id": "ingest-alive", "stage": "ingest", "status": "running", "owner": owner()},
            {"run_id": "ingest-elsewhere", "stage": "ingest", "status": "running", "owner": "other-host:1:1"},
        ],
    )
    assert mark_interrupted(cat) == 1
    status = {r["run_id"]: r["status"] for r in cat.query("SELECT run_id, status FROM stage_runs")}
    assert status == {"ingest-dead": "interrupted", "ingest-alive": "running", "ingest-elsewhere": "running"}
