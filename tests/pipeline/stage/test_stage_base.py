"""The stage base: counts, quarantine, config/stats beside outputs, stage_runs rows, ZeroOutput, atomic writes;
the `Stage` class: compatibility, resume by id, the manifest forwarding its upstream, rank folders, staging."""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import ValidationError

from catalog import Catalog
from catalog.errors import DraftsetError, StageFailed, ZeroOutput
from catalog.io import atomic_path, write_json_atomic
from catalog.shards import ParquetShardWriter, iter_rows
from pipeline.stage import AsyncStage, Stage, StageConfig, StageRun


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


# -- the Stage base ---------------------------------------------------------------------------------------


TEXT = pa.schema([("id", pa.string()), ("text", pa.string())])


class CopyConfig(StageConfig):
    source: str
    suffix: str = "!"
    rows_per_shard: int = 100


class CopyStage(Stage[CopyConfig]):
    """Copies rows {id, text} from an upstream stage's shards, appending `suffix`; drops empty texts."""

    name = "copy"
    config_model = CopyConfig
    resume_key = "id"
    recomputed = frozenset({"rows_per_shard"})

    def inputs(self):
        return [Path(self.config.source)]

    def rows(self):
        return iter_rows([Path(self.config.source)])

    def process(self, rows, run):
        with ParquetShardWriter(self.work_dir, TEXT, rows_per_shard=self.config.rows_per_shard) as writer:
            for row in rows:
                run.seen()
                if row["id"] in self.done:
                    run.skipped("already_written")
                elif not row["text"]:
                    run.drop("empty_text", where={"id": row["id"]})
                else:
                    writer.write({"id": row["id"], "text": row["text"] + self.config.suffix})
                    run.emitted()
        return {"copied": run.counts["out"]}


class SnapshotStage(CopyStage):
    """The same work, all or nothing: built in a staging folder and swapped into place."""

    name = "snapshot"
    staged = True
    resume_key = None


def _upstream(tmp_path, texts, manifest=True):
    src = tmp_path / "upstream"
    with ParquetShardWriter(src, TEXT) as writer:
        writer.write_many({"id": f"r{i}", "text": t} for i, t in enumerate(texts))
    if manifest:
        write_json_atomic(src / "manifest.json", {"stage": "ingest", "run_id": "ingest-1", "counts": {"out": 3}})
    return src


def _texts(folder):
    return sorted((r["id"], r["text"]) for r in iter_rows([folder]))


def test_stage_writes_manifest_forwarding_upstream_and_records_the_run(tmp_path):
    cat = Catalog(tmp_path / "home")
    src = _upstream(tmp_path, ["a", "", "c"])
    result = CopyStage(CopyConfig(source=str(src)), tmp_path / "out", cat).run()
    assert result.counts == {"in": 3, "out": 2, "errors": 0, "dropped_empty_text": 1}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest == result.manifest
    assert manifest["stage"] == "copy" and manifest["run_id"] == result.run_id and manifest["copied"] == 2
    assert manifest["config"] == {"source": str(src), "suffix": "!", "rows_per_shard": 100}
    assert manifest["counts"]["dropped_empty_text"] == 1 and manifest["outputs"] == ["part-00000.parquet"]
    assert manifest["upstream"] == [{"stage": "ingest", "run_id": "ingest-1", "counts": {"out": 3}}]
    assert _texts(tmp_path / "out") == [("r0", "a!"), ("r2", "c!")]
    (row,) = _runs(cat)
    assert row["stage"] == "copy" and row["status"] == "ok" and json.loads(row["counts"])["out"] == 2
    # a downstream stage forwards this manifest, which forwards its own upstream
    again = CopyStage(CopyConfig(source=str(tmp_path / "out")), tmp_path / "down").run()
    assert again.manifest["upstream"][0]["run_id"] == result.run_id
    assert again.manifest["upstream"][0]["upstream"][0]["run_id"] == "ingest-1"


def test_stage_resumes_by_id_and_tolerates_recomputed_fields(tmp_path):
    src = _upstream(tmp_path, ["a", "b", "c"])
    CopyStage(CopyConfig(source=str(src)), tmp_path / "out").run()
    with ParquetShardWriter(src, TEXT) as writer:  # upstream grew by one row
        writer.write({"id": "r3", "text": "d"})
    second = CopyStage(CopyConfig(source=str(src), rows_per_shard=5), tmp_path / "out").run()
    assert second.counts == {"in": 4, "out": 1, "errors": 0, "skipped_already_written": 3}
    assert _texts(tmp_path / "out") == [("r0", "a!"), ("r1", "b!"), ("r2", "c!"), ("r3", "d!")]


def test_stage_refuses_to_resume_with_other_settings(tmp_path):
    src = _upstream(tmp_path, ["a", "b"])
    out = tmp_path / "out"
    CopyStage(CopyConfig(source=str(src)), out).run()
    with pytest.raises(DraftsetError) as exc:
        CopyStage(CopyConfig(source=str(src), suffix="?"), out).run()
    message = str(exc.value)
    assert message == (
        f"{out} holds copy output made with different settings (suffix): suffix: ! -> ?; "
        "resuming would mix incompatible rows"
    )
    assert "\n" not in message and "--fresh" in exc.value.hint
    assert _texts(out) == [("r0", "a!"), ("r1", "b!")]  # nothing touched
    fresh = CopyStage(CopyConfig(source=str(src), suffix="?"), out, fresh=True).run()
    assert fresh.counts["out"] == 2 and _texts(out) == [("r0", "a?"), ("r1", "b?")]


def test_stage_zero_output_raises_and_writes_no_manifest(tmp_path):
    cat = Catalog(tmp_path / "home")
    src = _upstream(tmp_path, ["", ""], manifest=False)
    with pytest.raises(ZeroOutput, match=r"copy: 2 rows in, 0 out \(dropped_empty_text=2\)") as exc:
        CopyStage(CopyConfig(source=str(src)), tmp_path / "out", cat).run()
    assert isinstance(exc.value, StageFailed) and exc.value.counts["dropped_empty_text"] == 2
    assert not (tmp_path / "out" / "manifest.json").exists()
    assert len((tmp_path / "out" / "quarantine.jsonl").read_text().splitlines()) == 2
    (row,) = _runs(cat)
    assert row["status"] == "failed"


def test_stage_failure_on_write_is_a_stage_failed_with_counts(tmp_path):
    class Broken(CopyStage):
        def process(self, rows, run):
            run.seen()
            raise OSError(28, "No space left on device")

    src = _upstream(tmp_path, ["a"])
    with pytest.raises(StageFailed, match="cannot write under .*No space left") as exc:
        Broken(CopyConfig(source=str(src)), tmp_path / "out").run()
    assert exc.value.stage == "copy" and exc.value.counts["in"] == 1 and "re-run" in exc.value.hint


def test_stage_writes_a_rank_folder_under_torchrun(tmp_path, monkeypatch):
    src = _upstream(tmp_path, ["a", "b"])
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    result = CopyStage(CopyConfig(source=str(src)), tmp_path / "out").run()
    assert result.out_dir == tmp_path / "out" / "rank1"
    assert (tmp_path / "out" / "rank1" / "manifest.json").is_file() and not (
        tmp_path / "out" / "manifest.json"
    ).exists()
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert CopyStage(CopyConfig(source=str(src)), tmp_path / "solo").out_dir == tmp_path / "solo"


def test_staged_stage_swaps_into_place_reuses_identical_output_and_needs_fresh_to_change(tmp_path):
    cat = Catalog(tmp_path / "home")
    src = _upstream(tmp_path, ["a", "b"])
    out = tmp_path / "snap"
    first = SnapshotStage(CopyConfig(source=str(src)), out, cat).run()
    assert not first.reused and _texts(out) == [("r0", "a!"), ("r1", "b!")]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left
    again = SnapshotStage(CopyConfig(source=str(src)), out, cat).run()
    assert again.reused and again.counts == {"in": 2, "out": 0, "errors": 0, "skipped_already_built": 2}
    with pytest.raises(DraftsetError, match=r"different settings \(suffix\)"):
        SnapshotStage(CopyConfig(source=str(src), suffix="?"), out, cat).run()
    rebuilt = SnapshotStage(CopyConfig(source=str(src), suffix="?"), out, cat, fresh=True).run()
    assert not rebuilt.reused and _texts(out) == [("r0", "a?"), ("r1", "b?")]
    assert [r["status"] for r in _runs(cat)] == ["ok", "ok", "ok"]


class AsyncCopyStage(AsyncStage[CopyConfig]):
    """The copy as a coroutine; its session resolves a setting (as regenerate resolves the served model)."""

    name = "acopy"
    config_model = CopyConfig
    resume_key = "id"

    def inputs(self):
        return [Path(self.config.source)]

    def rows(self):
        return iter_rows([Path(self.config.source)])

    @asynccontextmanager
    async def session(self):
        self.config = self.config.model_copy(update={"suffix": "~"})  # e.g. the endpoint's model name
        self.opened = True
        yield
        self.opened = False

    async def process(self, rows, run):
        assert self.opened
        with ParquetShardWriter(self.work_dir, TEXT) as writer:
            for row in rows:
                await asyncio.sleep(0)
                run.seen()
                if row["id"] in self.done:
                    run.skipped("already_written")
                else:
                    writer.write({"id": row["id"], "text": row["text"] + self.config.suffix})
                    run.emitted()
        return {"copied": run.counts["out"]}


def test_async_stage_is_one_class_with_the_same_books(tmp_path):
    src = _upstream(tmp_path, ["a", "b"])
    stage = AsyncCopyStage(CopyConfig(source=str(src)), tmp_path / "out")
    result = asyncio.run(stage.run())
    assert result.counts["out"] == 2 and result.manifest["copied"] == 2 and not stage.opened
    assert result.manifest["config"]["suffix"] == "~"  # what the session resolved is what was recorded
    assert json.loads((tmp_path / "out" / "config.json").read_text())["suffix"] == "~"
    again = asyncio.run(AsyncCopyStage(CopyConfig(source=str(src)), tmp_path / "out").run())
    assert again.counts == {"in": 2, "out": 0, "errors": 0, "skipped_already_written": 2}
