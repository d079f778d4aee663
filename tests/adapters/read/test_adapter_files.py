"""Reading local data files: every format, malformed content as errors (never raised), sampling across files."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.read import files
from adapters.read.source import iter_local_rows


def _jsonl(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return (path.name, path)


def test_jsonl_malformed_lines_come_back_as_errors_with_line_numbers(tmp_path):
    entry = _jsonl(tmp_path / "d.jsonl", ['{"a": 1}', '{"a": 2', "", "[1, 2]", '"text"', '{"a": 3}'])
    rows = list(iter_local_rows([entry]))
    assert [(r.row_index, r.row) for r in rows] == [(0, {"a": 1}), (1, None), (2, None), (3, None), (4, {"a": 3})]
    assert rows[1].error.startswith("d.jsonl:2: invalid JSON")
    assert rows[2].error == "d.jsonl:4: expected a JSON object, got list"
    assert rows[3].error == "d.jsonl:5: expected a JSON object, got str"


def test_huge_row_is_refused_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_ROW_BYTES", 1000)
    entry = _jsonl(tmp_path / "d.jsonl", ['{"a": 1}', json.dumps({"a": "x" * 5000})])
    rows = list(iter_local_rows([entry]))
    assert rows[0].row == {"a": 1} and "over the 1,000-byte limit" in rows[1].error


def test_json_array_csv_parquet_and_gzip(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([{"q": "1"}, {"q": "2"}, 5]))
    (tmp_path / "b.csv").write_text('question,answer\n"multi\nline",4\nx,y,z\n')
    pq.write_table(pa.table({"q": ["p1", "p2"], "n": [1, 2]}), tmp_path / "c.parquet")
    with gzip.open(tmp_path / "d.jsonl.gz", "wt") as fh:
        fh.write('{"q": "g"}\n')
    names = ["a.json", "b.csv", "c.parquet", "d.jsonl.gz"]
    rows = list(iter_local_rows([(n, tmp_path / n) for n in names]))
    assert [r.row for r in rows] == [
        {"q": "1"},
        {"q": "2"},
        None,
        {"question": "multi\nline", "answer": "4"},
        None,
        {"q": "p1", "n": 1},
        {"q": "p2", "n": 2},
        {"q": "g"},
    ]
    assert rows[2].error == "a.json[2]: expected a JSON object, got int"
    assert "cells beyond the header" in rows[4].error
    assert [r.row_index for r in rows] == list(range(8))


def test_json_file_that_is_really_json_lines(tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1}\n{"a": 2}\n')
    assert [r.row for r in iter_local_rows([("x.json", tmp_path / "x.json")])] == [{"a": 1}, {"a": 2}]


def test_broken_parquet_and_unknown_type_are_errors(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    (tmp_path / "x.txt").write_text("hello")
    rows = list(iter_local_rows([("bad.parquet", tmp_path / "bad.parquet"), ("x.txt", tmp_path / "x.txt")]))
    assert "not a readable parquet file" in rows[0].error and "unsupported data file type" in rows[1].error


def test_corrupt_parquet_page_loses_its_row_group_only_and_keeps_later_indexes(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "PARQUET_BATCH_ROWS", 100)
    pq.write_table(
        pa.table({"q": [f"prompt {i} " * 20 for i in range(500)]}), tmp_path / "a.parquet", row_group_size=100
    )
    data = bytearray((tmp_path / "a.parquet").read_bytes())
    data[len(data) // 2 : len(data) // 2 + 200] = b"\xab" * 200  # garbage in a middle data page
    (tmp_path / "a.parquet").write_bytes(bytes(data))
    entry = _jsonl(tmp_path / "b.jsonl", ['{"q": "after"}'])
    rows = list(iter_local_rows([("a.parquet", tmp_path / "a.parquet"), entry]))
    good = [r for r in rows[:500] if r.error is None]
    bad = [r for r in rows[:500] if r.error is not None]
    assert 0 < len(good) < 500 and all(r.row["q"].startswith(f"prompt {r.row_index} ") for r in good)
    assert len(good) + len(bad) == 500 and len(bad) % 100 == 0  # whole row groups lost, never more
    assert all("a.parquet: rows from" in r.error and r.error.reason == "unreadable_rows" for r in bad)
    assert any(r.row_index > bad[-1].row_index for r in good) or bad[-1].row_index == 499
    assert (rows[500].row_index, rows[500].row) == (500, {"q": "after"})


def test_sample_spreads_over_all_files_and_limit_stops(tmp_path):
    entries = [
        _jsonl(tmp_path / f"part-{k}.jsonl", [json.dumps({"f": k, "i": i}) for i in range(50)]) for k in range(4)
    ]
    sample = list(iter_local_rows(entries, sample=20))
    assert len(sample) == 20 and {r.row["f"] for r in sample} == {0, 1, 2, 3}
    assert [r.row_index for r in sample] == [i * 10 for i in range(20)]
    assert [r.row_index for r in iter_local_rows(entries, limit=3)] == [0, 1, 2]
    assert len(list(iter_local_rows(entries, sample=1000))) == 200


@pytest.mark.parametrize(
    "name, fmt",
    [("a.parquet", "parquet"), ("x/b.JSONL", "jsonl"), ("c.json.gz", "json"), ("d.tsv", "tsv"), ("README.md", None)],
)
def test_file_format(name, fmt):
    assert files.file_format(name) == fmt


def test_dead_hub_is_one_clear_error_not_a_retry_loop():
    from adapters.infer.infer import propose_adapter
    from adapters.read.source import iter_raw_rows
    from adapters.spec import SourceSpec
    from catalog.errors import DraftsetError

    dead = "http://127.0.0.1:9"
    source = SourceSpec(repo_id="a/b", revision="c" * 40, config="default", split="train", data_files=["x.jsonl"])
    for call in (
        lambda: propose_adapter("a/b", endpoint=dead, viewer_base=dead + "/viewer"),
        lambda: list(iter_raw_rows(source, endpoint=dead)),
    ):
        with pytest.raises(DraftsetError, match=r"cannot reach the Hub at http://127.0.0.1:9") as err:
            call()
        assert "draftset hub serve" in err.value.hint


def test_card_is_empty_only_when_the_repo_has_no_readme(hub_url):
    from huggingface_hub import HfApi

    from adapters.infer.infer import _card_text
    from catalog.errors import DraftsetError

    repo_id = "moonshot-fans/kimi-k2-chat-native"
    sha = HfApi(endpoint=hub_url).dataset_info(repo_id).sha
    assert "license" in _card_text(repo_id, sha, ["README.md"], hub_url, None)
    assert _card_text(repo_id, sha, ["data/x.jsonl"], hub_url, None) == ""  # no README: no card, nothing fetched
    with pytest.raises(DraftsetError, match="revision 0+ of"):  # an unreadable README is not an empty card
        _card_text(repo_id, "0" * 40, ["README.md"], hub_url, None)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_every_compression_fsspec_reads_gives_the_same_rows(tmp_path, suffix):
    from tests.fixtures.schemas.make_corpus import encode

    rows = [{"q": f"question {i}", "a": "答案" * i} for i in range(5)]
    for inner in ("jsonl", "json", "csv", "tsv"):
        name = f"part.{inner}{suffix}"
        (tmp_path / name).write_bytes(encode(name, rows))
        got = [r for r, err in files.iter_file(tmp_path / name, name)]
        assert got == [{k: str(v) for k, v in r.items()} if inner in ("csv", "tsv") else r for r in rows], name
        assert files.count_rows(tmp_path / name, name) == 5


def test_arrow_streams_are_read_and_a_bad_one_is_one_problem(tmp_path):
    from tests.fixtures.schemas.make_corpus import encode

    (tmp_path / "d.arrow").write_bytes(encode("d.arrow", [{"x": "a b c"}, {"x": "d e f"}]))
    assert [r for r, _ in files.iter_file(tmp_path / "d.arrow", "d.arrow")] == [{"x": "a b c"}, {"x": "d e f"}]
    (tmp_path / "bad.arrow").write_bytes(b"not arrow at all")
    [(row, err)] = list(files.iter_file(tmp_path / "bad.arrow", "bad.arrow"))
    assert row is None and "bad.arrow" in err


def test_formats_come_from_datasets_and_a_loading_script_is_refused_by_name():
    from adapters.infer.detect import detect

    assert files.file_format("x.jsonl.zst") == "jsonl" and files.file_format("x.arrow") == "arrow"
    assert files.file_format("x.tar") is None and files.datasets_module("x.tar") == "webdataset"
    assert detect([{"a": 1}], file_names=["builder.py"]).refusal == "loading_script"
    assert detect([{"a": 1}], file_names=["img/1.png", "img/2.jpg"]).refusal == "media"
    assert detect([{"a": 1}], file_names=["corpus.txt.xz"]).refusal == "plain_text"
