"""Ingest against a real local Hub (a small hub folder made per test): counts, quarantine, resume
by id, the gate, one failing dataset not losing the others, ZeroOutput; plus shard writing."""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from adapters.spec import AdapterSpec
from catalog import Catalog
from catalog.errors import DraftsetError, ZeroOutput
from catalog.home import Home
from catalog.shards import RECORD_SCHEMA, ParquetShardWriter, existing_ids, iter_rows, shard_paths
from pipeline.cli.app import app
from pipeline.ingest.fanout import ingest
from pipeline.ingest.run import ingest_dataset
from tests.kits.adapters import approve_on_hub, make_spec
from tests.kits.jsonl_hub import write_jsonl_repo


def _turns(i: int) -> dict:
    return {
        "messages": [
            {"role": "user", "content": f"question number {i}"},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    }


BROKEN_LINES = [
    json.dumps(_turns(0)),
    '{"messages": [{"role": "user", "content": "unterminated',  # malformed JSON
    json.dumps({"messages": [{"role": "user", "content": None}, {"role": "assistant", "content": "a"}]}),
    json.dumps({"messages": [{"role": "narrator", "content": "x"}, {"role": "assistant", "content": "a"}]}),
    json.dumps({"messages": [{"role": "user", "content": 42}, {"role": "assistant", "content": "a"}]}),
    json.dumps(_turns(5)),
]


@pytest.fixture()
def mini_hub(tmp_path):
    from pipeline.servers.localhub.server import serve_in_thread

    root = tmp_path / "hub"
    write_jsonl_repo(root, "lab/clean", [json.dumps(_turns(i)) for i in range(7)])
    write_jsonl_repo(root, "lab/broken", BROKEN_LINES)
    write_jsonl_repo(root, "lab/allbad", [json.dumps({"messages": [{"role": "user", "content": None}]})] * 3)
    running = serve_in_thread(root, host="127.0.0.1", port=0)
    yield root, running.url
    running.stop()


def _approve(cat: Catalog, url: str, repo_id: str, **fields: Any) -> AdapterSpec:
    return approve_on_hub(cat, url, repo_id, "test data is broken on purpose", **fields)


def test_counts_quarantine_and_resume_by_id(home, mini_hub):
    _, url = mini_hub
    cat = Catalog(home)
    _approve(cat, url, "lab/broken")
    result = ingest_dataset(cat, home, "lab/broken", endpoint=url)
    assert {k: v for k, v in result.counts.items() if v} == {
        "in": 6,
        "out": 2,
        "dropped_malformed": 1,
        "dropped_row_error": 3,
    }
    out = Home(home).normalized("lab/broken")
    rows = list(iter_rows([out]))
    assert [(r["row_index"], r["repo_id"], r["split"], r["n_turns"]) for r in rows] == [
        (0, "lab/broken", "train", 1),
        (5, "lab/broken", "train", 1),
    ]  # regenerate: context up to the user turn
    assert pq.read_schema(shard_paths(out)[0]).names == RECORD_SCHEMA.names
    quarantine = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    got = sorted((q["row_index"], q["reason"], q["field"]) for q in quarantine)
    assert got == [
        (1, "malformed", "<row>"),
        (2, "row_error", "messages[0].content"),
        (3, "row_error", "messages[0].role"),
        (4, "row_error", "messages[0].content"),
    ]
    assert all(q["detail"] and q["repo_id"] == "lab/broken" and len(q["revision"]) == 40 for q in quarantine)
    # Re-run: nothing written twice, the done rows count as skipped.
    again = ingest_dataset(cat, home, "lab/broken", endpoint=url)
    assert again.counts["out"] == 0 and again.counts["skipped_already_written"] == 2
    assert len(existing_ids(out)) == 2 and len(shard_paths(out)) == 1
    manifest = json.loads((out / "manifest.json").read_text())  # what dedup and mix forward as their upstream
    assert manifest["stage"] == "ingest" and manifest["config"]["repo_id"] == "lab/broken"
    assert manifest["counts"] == again.counts and manifest["outputs"] == [shard_paths(out)[0].name]
    runs = cat.query("SELECT status, counts FROM stage_runs WHERE stage = 'ingest' ORDER BY started_at")
    assert [r["status"] for r in runs] == ["ok", "ok"]


def test_gate_refuses_unapproved_and_stale_adapters(home, mini_hub):
    root, url = mini_hub
    cat = Catalog(home)
    with pytest.raises(DraftsetError, match="no adapter for lab/clean") as exc:
        ingest_dataset(cat, home, "lab/clean", endpoint=url)
    assert "draftset adapters propose lab/clean" in exc.value.hint
    _approve(cat, url, "lab/clean")
    write_jsonl_repo(root, "lab/clean", [json.dumps(_turns(i)) for i in range(9)])  # the dataset moves on
    with pytest.raises(DraftsetError, match="stale") as exc:
        ingest_dataset(cat, home, "lab/clean", endpoint=url)
    assert "draftset adapters propose lab/clean" in exc.value.hint
    assert not Home(home).normalized("lab/clean").exists()


def test_one_failing_dataset_keeps_the_others_and_cli_exits_nonzero(home, mini_hub, monkeypatch):
    _, url = mini_hub
    cat = Catalog(home)
    for repo in ("lab/clean", "lab/allbad"):
        _approve(cat, url, repo)
    cat.upsert("candidates", [{"repo_id": r, "status": "planned"} for r in ("lab/clean", "lab/allbad")])
    results = ingest(cat, home, ["lab/allbad", "lab/clean", "lab/missing"], endpoint=url)
    by_repo = {r.repo_id: r for r in results}
    assert by_repo["lab/clean"].error is None and by_repo["lab/clean"].counts["out"] == 7
    assert "3 rows in, 0 out (dropped_row_error=3)" in by_repo["lab/allbad"].error
    assert "not found" in by_repo["lab/missing"].error
    assert len(list(iter_rows([Home(home).normalized("lab/clean")]))) == 7
    failed = cat.query("SELECT error FROM stage_runs WHERE status = 'failed'")
    assert len(failed) == 1 and "0 out" in failed[0]["error"]
    # ingest leaves find's table alone; the candidate_status view derives "ingested" from its ok run
    assert {r["status"] for r in cat.query("SELECT status FROM candidates")} == {"planned"}
    ok_run = cat.query("SELECT run_id FROM stage_runs WHERE status = 'ok'")[0]["run_id"]
    shown = cat.query("SELECT repo_id, status, ingest_run_id FROM candidate_status ORDER BY repo_id")
    assert [tuple(r.values()) for r in shown] == [("lab/allbad", "planned", None), ("lab/clean", "ingested", ok_run)]

    monkeypatch.setenv("HF_ENDPOINT", url)
    from pipeline.cli import common

    common.settings.cache_clear()
    res = CliRunner().invoke(app, ["ingest", "--repo", "lab/clean", "--repo", "lab/allbad"], catch_exceptions=True)
    assert res.exit_code != 0 and isinstance(res.exception, DraftsetError)
    assert "lab/allbad" in str(res.exception) and "lab/clean" not in str(res.exception)
    assert "TOTAL" in res.output and "skipped" in res.output


def test_dead_hub_is_one_clear_error_per_dataset(home):
    import time

    from pipeline.servers.localhub.server import free_port

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    t0 = time.monotonic()
    (result,) = ingest(Catalog(home), home, ["lab/clean"], endpoint=dead)
    assert f"cannot reach the Hub at {dead}" in result.error and "HF_ENDPOINT" in result.hint
    assert time.monotonic() - t0 < 10  # the probe answers at once instead of huggingface_hub's retries


def test_zero_output_is_loud(home, mini_hub):
    _, url = mini_hub
    cat = Catalog(home)
    _approve(cat, url, "lab/allbad")
    with pytest.raises(ZeroOutput) as exc:
        ingest_dataset(cat, home, "lab/allbad", endpoint=url)
    assert "quarantine.jsonl" in exc.value.hint


def test_changed_spec_needs_fresh(home, mini_hub):
    _, url = mini_hub
    cat = Catalog(home)
    _approve(cat, url, "lab/clean")
    ingest_dataset(cat, home, "lab/clean", endpoint=url)
    _approve(cat, url, "lab/clean", mode="native")
    with pytest.raises(DraftsetError, match="holds shards from adapter spec") as exc:
        ingest_dataset(cat, home, "lab/clean", endpoint=url)
    assert "--fresh" in exc.value.hint
    result = ingest_dataset(cat, home, "lab/clean", endpoint=url, fresh=True)
    assert result.counts["out"] == 7
    assert {r["mode"] for r in iter_rows([Home(home).normalized("lab/clean")])} == {"native"}


def test_shard_writer_is_atomic_numbered_and_appends(tmp_path):
    row = {name: None for name in RECORD_SCHEMA.names} | {"id": "x", "row_index": 1}
    with ParquetShardWriter(tmp_path, rows_per_shard=2) as writer:
        writer.write_many(dict(row, id=f"r{i}") for i in range(5))
    assert [p.name for p in shard_paths(tmp_path)] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    with ParquetShardWriter(tmp_path) as writer:
        writer.write(dict(row, id="r5"))
    assert shard_paths(tmp_path)[-1].name == "part-00003.parquet"
    assert existing_ids(tmp_path) == {f"r{i}" for i in range(6)}
    with pytest.raises(DraftsetError, match="does not match the shard schema"):
        with ParquetShardWriter(tmp_path) as writer:
            writer.write(dict(row, row_index="not an int"))
    assert len(shard_paths(tmp_path)) == 4 and not list(tmp_path.glob(".*"))


def _local_spec() -> AdapterSpec:
    return make_spec(repo_id="lab/local", revision="b" * 40, role_map={"user": "user", "assistant": "assistant"})


def test_interrupted_run_resumes_by_id_without_duplicates(tmp_path):
    from adapters.read.source import RawRow
    from pipeline.ingest.run import IngestConfig, ingest_rows
    from pipeline.stage import StageRun

    spec = _local_spec()
    rows = [RawRow(i, _turns(i)) for i in range(10)]
    config = IngestConfig.for_spec(spec)

    def killed_after(n):
        yield from rows[:n]
        raise KeyboardInterrupt  # the user presses ^C mid-way

    with pytest.raises(KeyboardInterrupt):
        with StageRun("ingest", config, tmp_path) as run:
            ingest_rows(spec, killed_after(4), tmp_path, run)
    assert len(existing_ids(tmp_path)) == 4  # finished rows were kept
    with StageRun("ingest", config, tmp_path) as run:
        ingest_rows(spec, iter(rows), tmp_path, run, max_conversation_chars=400)
    assert run.counts["skipped_already_written"] == 4 and run.counts["out"] == 6
    ids = [r["id"] for r in iter_rows([tmp_path])]
    assert len(ids) == len(set(ids)) == 10

    huge = RawRow(10, {"messages": [{"role": "user", "content": "x" * 1000}]})
    with StageRun("ingest", config, tmp_path / "huge") as run:
        ingest_rows(spec, iter([rows[0], huge]), tmp_path / "huge", run, max_conversation_chars=400)
    assert run.counts["dropped_too_large"] == 1 and run.counts["out"] == 1
    (entry,) = [json.loads(x) for x in (tmp_path / "huge" / "quarantine.jsonl").read_text().splitlines()]
    assert entry["row_index"] == 10 and entry["field"] == "<conversation>" and "> 400" in entry["detail"]


def _field_shape(field: str) -> str:
    """`messages[3].role` → `messages[].role` (expected.py names some fields per row, some per turn)."""
    return re.sub(r"\[\d+\]", "[]", field)


def test_fixture_hub_ingest_gives_expected_counts_and_quarantine(fixture_home):
    """Must-show: every approved fixture adapter ingests to the exact expected counts; every planted
    bad row is in the quarantine with its row index, field and reason."""
    from tests.fixtures.expected import EXPECTED

    home, results = fixture_home
    checked = 0
    for repo, exp in EXPECTED.items():
        if exp.records == 0:
            continue
        res = results[repo]
        assert res.error is None, (repo, res.error)
        assert (res.counts["in"], res.counts["out"], res.counts["errors"]) == (exp.n_rows, exp.records, 0), repo
        out = Home(home).normalized(repo)
        rows = list(iter_rows([out], columns=["id", "repo_id", "revision", "config", "split", "row_index", "mode"]))
        assert len(rows) == exp.records and len({r["id"] for r in rows}) == exp.records
        assert {(r["repo_id"], r["config"], r["split"], r["mode"]) for r in rows} == {
            (repo, exp.config, exp.split, exp.mode)
        }
        assert {r["row_index"] for r in rows} == set(range(exp.n_rows)) - set(exp.bad_rows)
        quarantine = out / "quarantine.jsonl"
        entries = [json.loads(x) for x in quarantine.read_text().splitlines()] if quarantine.exists() else []
        assert {e["row_index"]: e for e in entries}.keys() == exp.bad_rows.keys(), repo
        for entry in entries:
            expected_field, _, _ = exp.bad_rows[entry["row_index"]].partition(": ")
            if expected_field == "line":
                assert entry["reason"] == "malformed" and entry["field"] == "<row>"
            else:
                assert entry["reason"] == "row_error", entry
                assert expected_field in (entry["field"], _field_shape(entry["field"])), entry
            assert entry["detail"] and entry["revision"] == rows[0]["revision"]
        checked += 1
    assert checked == 31


def test_datasets_ingest_in_parallel_workers_with_the_same_results(home, mini_hub):
    """Two worker processes (datatrove's local executor) share the catalog; results come back in order."""
    _, url = mini_hub
    cat = Catalog(home)
    for repo in ("lab/clean", "lab/allbad", "lab/broken"):
        _approve(cat, url, repo)
    results = ingest(cat, home, ["lab/allbad", "lab/clean", "lab/broken", "lab/missing"], endpoint=url, workers=2)
    assert [r.repo_id for r in results] == ["lab/allbad", "lab/clean", "lab/broken", "lab/missing"]
    assert results[1].error is None and results[1].counts["out"] == 7
    assert results[2].counts["out"] == 2 and results[2].counts["dropped_row_error"] == 3
    assert "0 out" in results[0].error and "not found" in results[3].error
    runs = cat.query("SELECT status, count(*) AS n FROM stage_runs WHERE stage = 'ingest' GROUP BY status")
    assert {r["status"]: r["n"] for r in runs} == {"ok": 2, "failed": 1}
    assert not list((Home(home).root / "tmp").iterdir())  # the task folder is per invocation
