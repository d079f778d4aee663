"""LLaMA-Factory's registry, reproduced on local demo files: every entry right or refused by name, none silently
wrong; the alpaca-format entries (one-word and Chinese instructions, empty `input`) map as columns."""

from __future__ import annotations

import json
import random

import pytest

from eval.bench.llamafactory_registry import DEFAULT_DATA, registry_truth, run
from tests.fixtures.llamafactory.make_registry import entries


@pytest.fixture(scope="module")
def outcomes():
    return {e.name: e for e in run(DEFAULT_DATA)}


def test_fixture_matches_its_generator_and_the_registry_has_fourteen_local_entries():
    info = json.loads((DEFAULT_DATA / "dataset_info.json").read_text())
    generated = entries(random.Random(20))
    assert set(info) == set(generated) and len(info) == 14
    for name, (entry, content) in generated.items():
        assert {k: v for k, v in info[name].items() if k != "file_name"} == entry
        if not isinstance(content, str):
            assert json.loads((DEFAULT_DATA / info[name]["file_name"]).read_text()) == content, name


def test_every_entry_right_or_refused_as_expected(outcomes):
    bad = {n: (e.outcome, e.detail) for n, e in outcomes.items() if e.outcome not in ("right", "refused-as-expected")}
    assert bad == {}  # the glaive demos too: `tools` "[]" on a quarter of their rows, declarations read via JSON
    refused = {n for n, e in outcomes.items() if e.outcome == "refused-as-expected"}
    assert refused == {
        "mllm_demo",
        "mllm_audio_demo",
        "mllm_video_demo",
        "mllm_video_audio_demo",
        "c4_demo",
        "wiki_demo",
    }


def test_alpaca_entries_are_columns_and_two_broken_rows_do_not_refuse_glaive_zh(outcomes):
    for name in ("identity", "alpaca_en_demo", "alpaca_zh_demo"):
        assert outcomes[name].detail.startswith("columns ['instruction'"), outcomes[name].detail
    assert "298/300 rows" in outcomes["glaive_toolcall_zh_demo"].detail


def test_the_oracle_drops_rows_that_break_alternation():
    entry = {"formatting": "sharegpt", "columns": {"messages": "conversations"}}
    row = {"conversations": [{"from": "human", "value": "a"}, {"from": "observation", "value": "{}"}]}
    assert registry_truth(entry, row) is None
    ok = {"conversations": [{"from": "human", "value": "a  b"}, {"from": "gpt", "value": "c"}]}
    assert registry_truth(entry, ok) == {
        "messages": [{"role": "user", "content": "a b"}, {"role": "assistant", "content": "c"}]
    }
