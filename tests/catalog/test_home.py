"""Home is the one place that knows the layout of a draftset home; io writes whole files or nothing."""

from __future__ import annotations

import pytest

from catalog import Catalog, Home, StageFailed, ZeroOutput
from catalog.errors import DraftsetError
from catalog.io import atomic_path, stable_bucket, write_json_atomic


def test_layout_matches_what_the_stages_write(tmp_path):
    home = Home(tmp_path)
    assert home.catalog_file == Catalog(tmp_path).path == tmp_path / "catalog.duckdb"
    assert home.normalized("lab/chat") == tmp_path / "data" / "normalized" / "lab__chat"
    assert home.mix("m1") == tmp_path / "data" / "mix" / "m1"
    assert home.regen("m1") == tmp_path / "data" / "regen" / "m1"
    assert home.build("m1") == tmp_path / "data" / "build" / "m1"
    assert home.report("m1") == tmp_path / "reports" / "m1"
    assert home.adapter_yaml("lab/chat") == tmp_path / "adapters" / "lab__chat.yaml"
    assert home.toy_target == tmp_path / "models" / "toy-target"
    assert home.kind_root("builds") == tmp_path / "data" / "build"  # `draftset capture NAME` looks here
    assert home.capture("m1") == tmp_path / "captures" / "m1" and home.draft("m1") == tmp_path / "drafts" / "m1"
    assert Home(home) == home  # a Home or a path: callers may pass either


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".hidden"])
def test_names_that_would_escape_their_folder_are_refused(tmp_path, bad):
    with pytest.raises(DraftsetError, match="invalid mix name"):
        Home(tmp_path).mix(bad)


@pytest.mark.parametrize("bad", ["../escape", "a/b/c", "", "nohost"])
def test_repo_ids_that_would_escape_normalized_are_refused(tmp_path, bad):
    with pytest.raises(DraftsetError, match="not a dataset repo id"):
        Home(tmp_path).normalized(bad)


def test_normalized_repos_lists_only_folders_with_finished_shards(tmp_path):
    home = Home(tmp_path)
    (home.normalized("lab/done")).mkdir(parents=True)
    (home.normalized("lab/done") / "part-00000.parquet").write_bytes(b"")
    (home.normalized("lab/empty")).mkdir(parents=True)
    (home.normalized("lab/empty") / ".part-00000.parquet.tmp").write_bytes(b"")
    assert home.normalized_repos() == ["lab/done"]


def test_atomic_write_leaves_the_old_file_when_the_block_fails(tmp_path):
    target = tmp_path / "x.json"
    write_json_atomic(target, {"a": 1})
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash")
    assert target.read_text().strip().replace(" ", "").replace("\n", "") == '{"a":1}'
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_stable_bucket_is_sha1_based_and_in_range():
    assert stable_bucket("row-1", 7) == stable_bucket("row-1", 7)
    assert {stable_bucket(f"row-{i}", 4) for i in range(200)} == {0, 1, 2, 3}
    assert stable_bucket("abc", 1000) == int("a9993e364706816a", 16) % 1000  # sha1("abc") first 8 bytes


def test_stage_failed_carries_the_figures_and_stays_a_one_line_error():
    err = ZeroOutput("ingest: 3 rows in, 0 out", stage="ingest", run_id="r1", counts={"in": 3, "out": 0})
    assert isinstance(err, StageFailed) and isinstance(err, DraftsetError)
    assert (err.stage, err.run_id, err.counts) == ("ingest", "r1", {"in": 3, "out": 0})
