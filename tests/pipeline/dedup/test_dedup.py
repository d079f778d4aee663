"""Dedup: exact and near duplicates across sources, length filter, provenance queryable in SQL."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.cli.app import app
from pipeline.dedup.near import NearIndex
from pipeline.dedup.run import DedupConfig, run_dedup
from pipeline.rows.keys import normalize, prompt_hash, shingles
from pipeline.targets.lengths import ESTIMATE, TokenCounter


def distinct_prompt(i: int, n_words: int = 40) -> str:
    """A prompt that shares (almost) no word bigrams with any other index."""
    rng = random.Random(i)
    return " ".join(f"w{rng.randrange(10**6)}" for _ in range(n_words))


def reworded(text: str) -> str:
    """The same prompt with a word added in front and the last word replaced: a near duplicate."""
    words = text.split()
    return " ".join(["please"] + words[:-1] + ["thanks"])


LONG = (
    "Write a Python function that parses an ISO 8601 timestamp with an optional timezone offset, "
    "validates the date components, and returns a timezone aware datetime object"
)
OTHER = "Summarize the plot of a novel about lighthouse keepers stranded during a winter storm."


def test_normalize_and_hash_ignore_case_punctuation_and_spacing():
    assert normalize("  Hello,   WORLD!\n") == "hello world"
    assert prompt_hash("Hello, world!") == prompt_hash("hello   WORLD") != prompt_hash("hello there")
    assert shingles("a b") == {b"a b"} and len(shingles("a b c d", n=3)) == 2 and shingles("") == set()


def test_near_index_confirms_candidates_with_measured_similarity():
    index = NearIndex(threshold=0.8)
    texts = [normalize(LONG), normalize(reworded(LONG)), normalize(OTHER)]
    a, b, c = index.signatures(texts)
    assert index.match_or_add("a", a) is None
    match = index.match_or_add("b", b)
    assert match is not None and match[0] == "a" and 0.8 <= match[1] < 1.0
    assert index.match_or_add("c", c) is None
    assert index.signatures([""]) == [None] and index.match_or_add("e", None) is None


def _setup(home, sources, native_second=False):
    make, write = sources
    a = [make("lab-a/chat", i, distinct_prompt(i)) for i in range(12)]
    b = [
        make("lab-b/chat", i, reworded(distinct_prompt(i)), mode="native" if native_second else "regenerate")
        for i in range(3)
    ]  # near dups of a[0..2]
    b += [make("lab-b/chat", 10 + i, distinct_prompt(i).upper() + "!!") for i in range(3, 5)]  # exact of a[3..4]
    b += [make("lab-b/chat", 20, "hi")]  # too short (<2 tokens)
    b += [make("lab-b/chat", 21, " ".join(["word"] * 400))]  # too long
    write(home, a)
    write(home, b)
    return a, b


def _run(home, **overrides):
    counter = TokenCounter(None)
    params = (
        dict(repos=["lab-a/chat", "lab-b/chat"], min_prompt_tokens=2, max_prompt_tokens=300, length_unit=counter.method)
        | overrides
    )
    return run_dedup(Catalog(home), home, DedupConfig(**params), home / "data" / "dedup", counter)


def test_near_duplicates_across_two_sources_removed_and_queryable_in_sql(home, sources):
    a, b = _setup(home, sources)
    result = _run(home)
    assert {k: v for k, v in result.counts.items() if v} == {
        "in": 19,
        "out": 12,
        "dropped_near": 3,
        "dropped_exact": 2,
        "dropped_too_short": 1,
        "dropped_too_long": 1,
    }
    assert result.kept_ids == {c.id for c in a}

    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "sql",
            "--format",
            "json",
            "SELECT d.record_id, d.repo_id, d.row_index, d.reason, d.duplicate_of, d.similarity, "
            "k.repo_id AS kept_repo, k.row_index AS kept_row, k.kept AS survivor_kept "
            "FROM dedup d JOIN dedup k ON k.record_id = d.duplicate_of "
            "WHERE d.reason = 'near' ORDER BY d.row_index",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [(r["repo_id"], r["row_index"], r["kept_repo"], r["kept_row"]) for r in rows] == [
        ("lab-b/chat", i, "lab-a/chat", i) for i in range(3)
    ]
    assert all(r["survivor_kept"] and 0.8 <= r["similarity"] < 1.0 for r in rows)
    exact = Catalog(home).query(
        "SELECT row_index, similarity, duplicate_of FROM dedup WHERE reason = 'exact' ORDER BY row_index"
    )
    assert [(r["row_index"], r["similarity"], r["duplicate_of"]) for r in exact] == [
        (10 + i, 1.0, a[i].id) for i in (3, 4)
    ]
    # The same decisions as parquet beside the stage outputs, with the length unit recorded.
    table = pq.read_table(home / "data" / "dedup" / "decisions.parquet").to_pylist()
    assert len(table) == 19 and {r["length_unit"] for r in table} == {ESTIMATE}
    assert sum(1 for line in (home / "data" / "dedup" / "quarantine.jsonl").open()) == 7


def test_native_rows_survive_over_regenerate_rows(home, sources):
    a, b = _setup(home, sources, native_second=True)
    result = _run(home)
    # lab-b's three native rows are now the survivors; lab-a's rewordings go instead.
    assert {c.id for c in b[:3]} <= result.kept_ids and not {c.id for c in a[:3]} & result.kept_ids


def test_threshold_is_configurable(home, sources):
    _setup(home, sources)
    assert _run(home, threshold=0.98).counts.get("dropped_near", 0) == 0
    with pytest.raises(ValidationError):
        _run(home, threshold=0.99)  # beyond what LSH with 128 permutations can index


def _word_tokenizer(folder: Path) -> Path:
    """A real tokenizer.json (word-level, built with `tokenizers`) standing in for the target's."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "one": 1, "two": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


def test_length_filter_counts_target_tokenizer_tokens(home, tmp_path, sources):
    make, write = sources
    write(home, [make("lab-c/chat", 0, "one two three four five six"), make("lab-c/chat", 1, "one two")])
    tok_dir = _word_tokenizer(tmp_path / "tok")
    counter = TokenCounter(tok_dir)
    assert counter.count_many(["one two three"]) == [3] and not counter.is_estimate
    cfg = DedupConfig(repos=["lab-c/chat"], max_prompt_tokens=5, length_unit=counter.method)
    result = run_dedup(Catalog(home), home, cfg, home / "dd", counter)
    assert result.counts["dropped_too_long"] == 1 and result.counts["out"] == 1
    decision = pq.read_table(home / "dd" / "decisions.parquet").to_pylist()
    assert {r["prompt_tokens"] for r in decision} == {6, 2}
    assert decision[0]["length_unit"] == f"tokenizer:{tok_dir}"


def test_default_tokenizer_is_toy_target_else_estimate(home, tmp_path):
    assert TokenCounter.resolve(None, home).method == ESTIMATE
    with pytest.raises(DraftsetError, match="no tokenizer.json"):
        TokenCounter.resolve(tmp_path, home)
    toy = _word_tokenizer(home / "models" / "toy-target")
    assert TokenCounter.resolve(None, home).method == f"tokenizer:{toy}"


def test_planted_fixture_duplicates_found_exactly_and_provenance_in_sql(fixture_home, monkeypatch):
    """Must-show on the fixture Hub: the exact and near duplicates planted across ShareGPT, UltraChat,
    OpenHermes and Infinity-Instruct are removed (and nothing else); `draftset sql` shows who survived."""
    from tests.fixtures.expected import DEDUP_REPOS, EXACT_DUP_GROUPS, NEAR_DUP_PAIRS

    home, _ = fixture_home
    counter = TokenCounter(None)
    cfg = DedupConfig(repos=list(DEDUP_REPOS), length_unit=counter.method)
    result = run_dedup(Catalog(home), home, cfg, home / "data" / "dedup-planted", counter)
    n_in = result.counts["in"]
    assert n_in == 80 + 100 + 80 + 80
    exact_drops = sum(len(g) - 1 for g in EXACT_DUP_GROUPS)
    punct = sum(1 for *_, kind in NEAR_DUP_PAIRS if kind == "punct")  # identical once punctuation goes
    assert {k: v for k, v in result.counts.items() if v} == {
        "in": n_in,
        "out": n_in - exact_drops - len(NEAR_DUP_PAIRS),
        "dropped_exact": exact_drops + punct,
        "dropped_near": len(NEAR_DUP_PAIRS) - punct,
    }

    monkeypatch.setenv("DRAFTSET_HOME", str(home))
    from pipeline.cli import common

    common.settings.cache_clear()
    res = CliRunner().invoke(
        app,
        [
            "sql",
            "--format",
            "json",
            "SELECT d.repo_id, d.row_index, d.reason, d.similarity, k.repo_id AS kept_repo, "
            "k.row_index AS kept_row, k.kept AS survivor_kept FROM dedup d "
            "JOIN dedup k ON k.record_id = d.duplicate_of "
            f"WHERE d.stage_run_id = '{result.run_id}' AND NOT d.kept",
        ],
    )
    assert res.exit_code == 0, res.output
    dropped = {(r["repo_id"], r["row_index"]): r for r in json.loads(res.output)}
    # Survivor = first in the fixed order (all four are regenerate data): lowest repo id, then row.
    expected: dict[tuple[str, int], tuple[tuple[str, int], str]] = {}
    for group in EXACT_DUP_GROUPS:
        keep, *rest = sorted(group)
        expected |= {row: (keep, "exact") for row in rest}
    for a, b, kind in NEAR_DUP_PAIRS:
        keep, drop = sorted([a, b])
        expected[drop] = (keep, "near" if kind == "word" else "exact")
    assert {row: ((r["kept_repo"], r["kept_row"]), r["reason"]) for row, r in dropped.items()} == expected
    assert all(r["survivor_kept"] for r in dropped.values())
    assert all(
        r["similarity"] == 1.0 if r["reason"] == "exact" else 0.8 <= r["similarity"] < 1.0 for r in dropped.values()
    )
