"""The stage base: counts, quarantine, config/stats beside outputs, stage_runs rows, ZeroOutput, atomic writes."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from catalog import Catalog
from catalog.errors import ZeroOutput
from catalog.io import atomic_path, write_json_atomic
from pipeline.stage import StageConfig, StageRun


class DemoConfig(StageConfig):
    source: str
    limit: int = 10


def _runs(cat: Catalog) -> list[dict]:
    return cat.query("SELECT * FROM stage_runs ORDER BY started_at")


def test_counts_quarantine_and_records(tmp_path):
    cat = Catalog(tmp_path / "home")
    out = tmp_path / "out"
    with StageRun("ingest", DemoConfig(source="a/b"), out, cat) as run:
        for i in range(5):
            run.seen()
            if i == 3:
                run.drop(
                    "null_content",
                    where={"repo_id": "a/b", "row_index": i, "field": "messages[1].content"},
                    detail="content is null",
                )
            else:
                run.emitted()
        run.skipped("already_written", 2)
        run.tally("not_selected", 4)
        run.error()
    assert dict(run.counts) == {
        "in": 5,
        "out": 4,
        "errors": 1,
        "dropped_null_content": 1,
        "skipped_already_written": 2,
        "not_selected": 4,
    }
    quarantine = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    assert quarantine == [
        {
            "run_id": run.run_id,
            "reason": "null_content",
            "detail": "content is null",
            "repo_id": "a/b",
            "row_index": 3,
            "field": "messages[1].content",
        }
    ]
    assert json.loads((out / "config.json").read_text()) == {"stage": "ingest", "source": "a/b", "limit": 10}
    stats = json.loads((out / "stats.json").read_text())
    assert stats["counts"]["dropped_null_content"] == 1 and stats["error"] is None and stats["elapsed_s"] >= 0
    (row,) = _runs(cat)
    assert row["run_id"] == run.run_id and row["stage"] == "ingest" and row["status"] == "ok"
    assert json.loads(row["counts"])["out"] == 4 and json.loads(row["params"]) == {"source": "a/b", "limit": 10}
    assert row["finished_at"] is not None
    assert "dropped_null_content=1" in run.summary()


def test_zero_output_raises_and_is_recorded_failed(tmp_path):
    cat = Catalog(tmp_path / "home")
    with pytest.raises(ZeroOutput, match=r"3 rows in, 0 out \(dropped_bad_role=3\)"):
        with StageRun("ingest", DemoConfig(source="x/y"), tmp_path / "out", cat) as run:
            for i in range(3):
                run.seen()
                run.drop("bad_role", where={"row_index": i})
    (row,) = _runs(cat)
    assert row["status"] == "failed" and "0 out" in row["error"]


def test_empty_input_and_resumed_runs_are_not_zero_output(tmp_path):
    with StageRun("mix", DemoConfig(source="x/y"), tmp_path / "a") as run:
        pass  # no input at all: nothing to complain about
    with StageRun("mix", DemoConfig(source="x/y"), tmp_path / "b") as run:
        run.seen(4)
        run.skipped("already_written", 4)  # everything was done by an earlier run
    assert run.counts["out"] == 0 and json.loads((tmp_path / "b" / "stats.json").read_text())["error"] is None


def test_exception_inside_is_recorded_and_propagates(tmp_path):
    cat = Catalog(tmp_path / "home")
    with pytest.raises(RuntimeError, match="boom"):
        with StageRun("build", DemoConfig(source="s"), tmp_path / "out", cat) as run:
            run.seen()
            raise RuntimeError("boom")
    (row,) = _runs(cat)
    assert row["status"] == "failed" and row["error"] == "RuntimeError: boom"
    assert json.loads((tmp_path / "out" / "stats.json").read_text())["error"] == "RuntimeError: boom"


def test_reason_names_must_be_plain(tmp_path):
    with StageRun("ingest", DemoConfig(source="s"), tmp_path / "out") as run:
        run.seen()
        run.emitted()
        with pytest.raises(ValueError, match="snake_case"):
            run.drop("Bad Reason!")


def test_strict_config_rejects_unknown_keys_and_wrong_types():
    with pytest.raises(ValidationError):
        DemoConfig(source="s", surprise=1)
    with pytest.raises(ValidationError):
        DemoConfig(source="s", limit="10")


def test_atomic_path_keeps_old_file_on_failure(tmp_path):
    target = tmp_path / "d" / "file.json"
    write_json_atomic(target, {"v": 1})
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half written")
            raise RuntimeError("crash mid-write")
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in target.parent.iterdir()] == ["file.json"]  # no temp file left behind
