"""The attacks that got past the capped readers (issue 34), each from a small generated file: an Arrow IPC
dictionary bomb (file and stream format), a sparse 2 GB .arrow, a compressed CSV with one huge field, and
compressed JSONL of nothing but empty lines. Each is one named refusal (which file, which limit) or one
refused row, this process stays small, and the dataset's other files are still read."""

from __future__ import annotations

import bz2
import gzip
import json
import resource

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from adapters.read import files
from adapters.read.source import iter_local_rows
from catalog import limits


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _good_jsonl(path):
    path.write_text("".join(json.dumps({"prompt": f"q{i}"}) + "\n" for i in range(3)))
    return path


def _read(*paths):
    rows = list(iter_local_rows([(p.name, p) for p in paths]))
    return [r.row for r in rows if r.row], [r.error for r in rows if r.error]


@pytest.mark.parametrize("layout", ["file", "stream"])
def test_an_arrow_dictionary_bomb_is_refused_by_name_in_the_capped_child(tmp_path, layout):
    """~1 KB on disk (zstd bodies), 3 GB as rows: 300 rows all pointing at one 10 MB dictionary entry."""
    column = pa.DictionaryArray.from_arrays(pa.array([0] * 300, pa.int32()), pa.array(["x" * 10_000_000]))
    table = pa.table({"text": column})
    bomb = tmp_path / "bomb.arrow"
    writer = ipc.new_file if layout == "file" else ipc.new_stream
    with writer(bomb, table.schema, options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    assert bomb.stat().st_size < 5000
    before = _rss_mb()
    rows, problems = _read(bomb, _good_jsonl(tmp_path / "z.jsonl"))
    assert _rss_mb() - before < 400  # the 3 GB were never decoded in this process
    assert len(problems) == 1 and problems[0].reason == "file_over_limit" and problems[0].file == "bomb.arrow"
    assert "memory limit" in problems[0] and f"({bomb.stat().st_size:,} bytes on disk)" in problems[0]
    assert [r["prompt"] for r in rows] == ["q0", "q1", "q2"]


def test_a_sparse_2gb_arrow_file_is_read_a_message_at_a_time_not_whole(tmp_path):
    small = pa.table({"text": ["a", "b", "c"]})
    sparse = tmp_path / "sparse.arrow"
    with ipc.new_stream(sparse, small.schema) as w:
        w.write_table(small)
    with open(sparse, "r+b") as fh:
        fh.truncate(2 * 1024**3)  # a hole: no disk, but reading it whole is 2 GB of memory
    before = _rss_mb()
    got = list(files.iter_file(sparse, "sparse.arrow"))  # in this process, to see its own memory
    assert _rss_mb() - before < 200
    assert [row["text"] for row, _ in got if row] == ["a", "b", "c"]
    rows, problems = _read(sparse)  # and through the capped child
    assert [r["text"] for r in rows] == ["a", "b", "c"] and problems == []


@pytest.mark.parametrize("opener", [gzip.open, bz2.open])
def test_a_compressed_csv_with_one_huge_field_refuses_that_record_and_reads_the_next(tmp_path, opener):
    field = tmp_path / ("field.csv.gz" if opener is gzip.open else "field.csv.bz2")
    with opener(field, "wb") as fh:
        fh.write(b"prompt,answer\nq1,")
        for _ in range(40):  # a 40 MB field, over the 32 MB row limit, on one line
            fh.write(b"a" * (1 << 20))
        fh.write(b"\nq2,fine\n")
    rows, problems = _read(field, _good_jsonl(tmp_path / "z.jsonl"))
    assert [p.reason for p in problems] == ["too_large"] and problems[0].file == field.name
    assert {"prompt": "q2", "answer": "fine"} in rows and len(rows) == 4


def test_a_plain_csv_field_is_refused_before_it_is_built(tmp_path):
    path = tmp_path / "field.csv"
    path.write_bytes(b"prompt,answer\nq1," + b"a" * (48 << 20) + b"\nq2,fine\n")
    before = _rss_mb()
    got = list(files.iter_file(path, "field.csv"))
    assert _rss_mb() - before < 120  # csv alone held the 48 MB line plus a 4-byte-per-char field buffer
    assert [e.reason for _, e in got if e] == ["too_large"]
    assert [row for row, _ in got if row] == [{"prompt": "q2", "answer": "fine"}]


def test_compressed_empty_lines_are_bounded_in_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MIN_DECODED_BUDGET", 1024 * 1024)  # set in the parent, adopted by the child
    empty = tmp_path / "empty.jsonl.gz"
    empty.write_bytes(gzip.compress(b"\n" * (16 << 20)))  # 16 MB of nothing, ~16 KB on disk
    rows, problems = _read(empty, _good_jsonl(tmp_path / "z.jsonl"))
    assert len(problems) == 1 and problems[0].reason == "file_over_limit" and problems[0].file == empty.name
    assert f"decompresses to more than {limits.decoded_budget(empty.stat().st_size):,} bytes" in problems[0]
    assert len(rows) == 3


def test_compressed_empty_lines_are_bounded_in_wall_clock_time(tmp_path, monkeypatch):
    import time

    monkeypatch.setattr(limits, "MAX_FILE_READ_S", 2.0)
    empty = tmp_path / "empty.jsonl.bz2"
    with bz2.open(empty, "wb") as fh:  # 200 MB of empty lines (under the byte budget), ~200 bytes on disk
        for _ in range(200):
            fh.write(b"\n" * (1 << 20))
    started = time.monotonic()
    rows, problems = _read(empty, _good_jsonl(tmp_path / "z.jsonl"))
    assert time.monotonic() - started < 15
    assert len(problems) == 1 and problems[0].reason == "file_over_limit" and problems[0].file == empty.name
    assert "2 s per-file time limit" in problems[0]
    assert len(rows) == 3
