"""Untrusted data files are decoded only where memory is capped: a parquet dictionary bomb and gzip bombs of
every text format are one named refusal each (reason file_over_limit, with the size on disk), this process
stays small, and the dataset's other files are still read."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import resource
import signal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.read import capped
from adapters.read.source import iter_local_rows
from catalog import limits
from catalog.isolate import ChildDied, stream_isolated


def _good_jsonl(path, n=5):
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(n)))
    return path


def _dictionary_bomb(path):
    """~800 bytes on disk, 10 GB decoded: one 10 MB dictionary entry referenced by 1,000 rows."""
    column = pa.DictionaryArray.from_arrays(pa.array([0] * 1000, pa.int32()), pa.array(["x" * 10_000_000]))
    pq.write_table(pa.table({"text": column}), path, compression="zstd", use_dictionary=True)
    return path


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_parquet_dictionary_bomb_is_refused_by_name_and_the_rest_is_read(tmp_path):
    good = _good_jsonl(tmp_path / "a.jsonl")
    bomb = _dictionary_bomb(tmp_path / "bomb.parquet")
    after = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["fine"] * 4}), after)
    before = _rss_mb()
    rows = list(iter_local_rows([("a.jsonl", good), ("bomb.parquet", bomb), ("c.parquet", after)]))
    assert _rss_mb() - before < 400  # the 10 GB were never decoded here
    problems = [r.error for r in rows if r.error]
    assert len(problems) == 1 and problems[0].reason == "file_over_limit" and problems[0].file == "bomb.parquet"
    assert f"({bomb.stat().st_size:,} bytes on disk)" in problems[0]
    assert [r.row["text"] for r in rows if r.row and "text" in r.row] == ["fine"] * 4
    assert sum(1 for r in rows if r.row and "messages" in r.row) == 5


def _gz(path, text: str):
    path.write_bytes(gzip.compress(text.encode(), compresslevel=9))
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "tsv"])
def test_a_gzip_bomb_of_every_text_format_is_refused_by_name(tmp_path, monkeypatch, fmt):
    monkeypatch.setattr(limits, "MIN_DECODED_BUDGET", 1024 * 1024)  # the budget is set here, in the parent
    row = {"prompt": "a" * 1000, "answer": "b" * 1000}
    n = 4000  # 8 MB of text, ~40 KB gzipped: 200x
    if fmt == "jsonl":
        text = "".join(json.dumps(row) + "\n" for _ in range(n))
    elif fmt == "json":
        text = json.dumps([row] * n)
    else:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(row), delimiter="," if fmt == "csv" else "\t")
        writer.writeheader()
        writer.writerows([row] * n)
        text = buf.getvalue()
    bomb = _gz(tmp_path / f"bomb.{fmt}.gz", text)
    good = _good_jsonl(tmp_path / "z.jsonl")
    rows = list(iter_local_rows([(bomb.name, bomb), ("z.jsonl", good)]))
    problems = [r.error for r in rows if r.error]
    assert len(problems) == 1 and problems[0].reason == "file_over_limit", problems
    assert "bomb?" in problems[0] and f"{bomb.stat().st_size:,} bytes on disk" in problems[0]
    assert sum(1 for r in rows if r.row and "messages" in r.row) == 5  # the next file is still read


def test_small_compressed_and_parquet_files_read_as_before(tmp_path):
    gz = _gz(tmp_path / "ok.jsonl.gz", "".join(json.dumps({"q": i}) + "\n" for i in range(10)))
    pq.write_table(pa.table({"q": list(range(7))}), tmp_path / "ok.parquet")
    rows = list(iter_local_rows([("ok.jsonl.gz", gz), ("ok.parquet", tmp_path / "ok.parquet")], sample=5))
    assert [r.row_index for r in rows] == [0, 3, 6, 10, 13] and not any(r.error for r in rows)
    assert capped.count_rows(tmp_path / "ok.parquet", "ok.parquet") == 7


def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)
    yield 1


def test_a_crashing_reader_is_one_error_naming_the_signal():
    with pytest.raises(ChildDied, match="SIGSEGV"):
        list(stream_isolated(_segfault, what="reading x"))


def test_a_data_file_whose_name_holds_a_newline_is_named_not_skipped_silently():
    note = capped.unmatched_data_files(
        ["README.md", "data/train.jsonl", "data/tr\nain2.jsonl", "data/\x1b[2Jx.parquet"], ["data/train.jsonl"]
    )
    assert note is not None and "left out 2 data file(s)" in note
    assert '"data/tr\\nain2.jsonl"' in note and "\x1b" not in note and "\n" not in note
    assert capped.unmatched_data_files(["data/a.jsonl", "data/b.jsonl"], ["data/a.jsonl"]) is None  # a config choice
