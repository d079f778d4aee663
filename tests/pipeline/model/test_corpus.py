"""Toy-target text: every string field of every data file shape the fixture Hub uses."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.model.corpus import FALLBACK_ROWS, chat_pairs, corpus_rows


def test_reads_json_jsonl_csv_parquet_and_skips_malformed_lines(tmp_path):
    repo = tmp_path / "org" / "repo"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("---\nlicense: mit\n---\ncard text is not training text")
    (repo / "a.json").write_text(
        json.dumps(
            [{"conversations": [{"from": "human", "value": "json prompt"}, {"from": "gpt", "value": "json answer"}]}]
        )
    )
    (repo / "b.jsonl").write_text('{"instruction": "jsonl prompt", "response": "jsonl answer"}\n{broken\n')
    (repo / "c.csv").write_text("question,answer\ncsv prompt,csv answer\n")
    pq.write_table(pa.table({"problem": ["pq prompt"], "solution": ["pq answer"], "n": [3]}), repo / "d.parquet")
    rows = corpus_rows(tmp_path)
    found = rows[: len(rows) - len(FALLBACK_ROWS)]
    assert sorted(found) == sorted(
        [
            ["human", "json prompt", "gpt", "json answer"],  # row order, nested too
            ["jsonl prompt", "jsonl answer"],
            ["csv prompt", "csv answer"],
            ["pq prompt", "pq answer"],
        ]
    )
    assert rows[len(found) :] == FALLBACK_ROWS
    assert ("csv prompt", "csv answer") in chat_pairs(rows)


def test_missing_folder_falls_back_to_built_in_text(tmp_path):
    assert corpus_rows(tmp_path / "absent") == FALLBACK_ROWS


def test_unreadable_corpus_file_is_an_error_naming_it(tmp_path):
    import pytest

    from catalog.errors import DraftsetError

    (tmp_path / "good.jsonl").write_text('{"q": "fine"}\n')
    (tmp_path / "broken.json").write_text('[{"q": "cut off"')
    with pytest.raises(DraftsetError, match="broken.json"):
        corpus_rows(tmp_path)
