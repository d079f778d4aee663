"""Unit tests: config validation, answer points of multi-turn prompts, journal repair.

The `ask` functions here are FAKE replies (no server): they unit-test the turn-by-turn control flow
only. Every behaviour against a real HTTP server is tested in test_stage.py / test_kill_resume.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

import pyarrow.parquet as pq
import pytest
from regen_helpers import conversation

from catalog.errors import DraftsetError
from pipeline.regenerate.client import Reply, base_url
from pipeline.regenerate.config import RegenConfig, load_config
from pipeline.regenerate.conversation import Skip, length_function, regenerate
from pipeline.regenerate.progress import RegenProgress, hms
from pipeline.regenerate.store import RegenStore, recover


def _config(**extra) -> RegenConfig:
    return RegenConfig.model_validate({"mix": "m", "endpoints": ["http://x"], **extra})


def test_default_partitions_follow_the_field_figures():
    cfg = _config()
    short, long = cfg.partitions
    assert (short.concurrency, short.max_tokens, long.concurrency, long.max_tokens) == (150, 10_240, 32, 16_384)
    assert cfg.partition_for(10).name == "short" and cfg.partition_for(32_000).name == "short"
    assert cfg.partition_for(32_001).name == "long"


def test_config_rejects_bad_partitions_and_unknown_keys(tmp_path):
    with pytest.raises(ValueError, match="ordered by max_prompt"):
        _config(
            partitions=[
                {"name": "a", "max_prompt": None, "concurrency": 1, "max_tokens": 1},
                {"name": "b", "max_prompt": 5, "concurrency": 1, "max_tokens": 1},
            ]
        )
    with pytest.raises(ValueError, match="tokenizer"):
        _config(length_unit="tokens")
    bad = tmp_path / "regen.yaml"
    bad.write_text("endpoints: [http://x]\ntemprature: 0.1\n")
    with pytest.raises(DraftsetError, match="temprature"):
        load_config(bad, mix="m")


def test_shorthands_touch_every_partition_and_retry():
    cfg = load_config(None, mix="m", endpoints=["http://x"], max_tokens=64, concurrency=3, split_at=100, max_attempts=2)
    assert [(p.max_tokens, p.concurrency) for p in cfg.partitions] == [(64, 3), (64, 3)]
    assert cfg.partitions[0].max_prompt == 100 and cfg.partitions[1].max_prompt is None
    assert cfg.retry.max_attempts == 2 and cfg.retry.timeout_s == 1800.0  # a shorthand left out: the policy's
    assert RegenConfig.model_validate(cfg.model_dump()) == cfg  # folding again changes nothing (a stored config)


def test_base_url_accepts_both_forms():
    assert base_url("http://h:1") == base_url("http://h:1/v1/") == "http://h:1/v1"


def _fake_ask(log, finish="stop", text="ans"):
    """FAKE reply (labelled): returns canned text and records the context it was asked with."""

    async def ask(context, turn):
        log.append([dict(m) for m in context])
        return Reply(
            content=f"{text}{turn}",
            reasoning=None,
            finish_reason=finish,
            usage={"completion_tokens": 2},
            model="fake",
            endpoint="fake",
            attempts=1,
            latency_s=0.0,
        )

    return ask


def test_each_user_turn_is_answered_on_the_models_own_answers():
    conv = conversation(
        0,
        [
            ("system", "sys"),
            ("user", "q1"),
            ("assistant", "orig1"),
            ("tool", "tool out"),
            ("user", "q2a"),
            ("user", "q2b"),
            ("assistant", "orig2"),
        ],
    )
    log: list = []
    out, turns = asyncio.run(regenerate(conv, _fake_ask(log), thinking=True, include_length_truncated=False))
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "user", "user", "assistant"]
    assert [m.content for m in out.messages if m.role == "assistant"] == ["ans0", "ans1"]
    assert log[1] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "ans0"},
        {"role": "user", "content": "q2a"},
        {"role": "user", "content": "q2b"},
    ]
    assert all("orig" not in m["content"] and m["role"] != "tool" for m in log[1])
    assert len(turns) == 2 and "content" not in turns[0] and turns[0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    "turns, kwargs, reason",
    [
        ([("system", "s"), ("assistant", "a")], {}, "empty_prompt"),
        ([("user", "   ")], {}, "empty_prompt"),
        ([("user", "q")], {"finish": "length"}, "length_truncated"),
        ([("user", "q")], {"text": "<think>x"}, "leftover_think"),
    ],
)
def test_rows_that_cannot_train_are_skipped_with_a_reason(turns, kwargs, reason):
    with pytest.raises(Skip) as caught:
        asyncio.run(
            regenerate(conversation(0, turns), _fake_ask([], **kwargs), thinking=False, include_length_truncated=False)
        )
    assert caught.value.reason == reason


def test_length_truncated_kept_when_asked():
    out, turns = asyncio.run(
        regenerate(
            conversation(0, [("user", "q")]),
            _fake_ask([], finish="length"),
            thinking=True,
            include_length_truncated=True,
        )
    )
    assert turns[0]["finish_reason"] == "length" and out.messages[-1].content == "ans0"


def test_store_repairs_a_torn_journal_and_drops_stale_temp_files(tmp_path):
    (tmp_path / "errors.jsonl").write_text('{"id": "a", "reason": "x"}\n{"id": "b", "rea')
    (tmp_path / "skipped.jsonl").write_text('{"id": "c", "reason": "empty_prompt"}\n')
    (tmp_path / ".results-r-00000.parquet.123.tmp").write_bytes(b"half a shard")
    done = recover(tmp_path)
    assert done == {"results": set(), "errors": {"a"}, "skipped": {"c"}}
    assert (tmp_path / "errors.jsonl").read_text() == '{"id": "a", "reason": "x"}\n'
    assert not list(tmp_path.glob(".*.tmp"))
    row = {"id": "d", "conversation": "{}", "turns": "[]"}
    with RegenStore(tmp_path, "r", flush_rows=2, flush_seconds=60) as store:
        store.add_error({"id": "b", "reason": "y"})
        store.add_result(row)
        assert not list(tmp_path.glob("results-*.parquet"))  # buffered until flush_rows
        store.add_result({**row, "id": "e"})
        [shard] = tmp_path.glob("results-*.parquet")
        assert pq.read_table(shard).column("id").to_pylist() == ["d", "e"]
        store.add_result({**row, "id": "f"})  # the rest is written on exit
    assert [json.loads(x)["id"] for x in (tmp_path / "errors.jsonl").read_text().splitlines()] == ["a", "b"]
    assert recover(tmp_path)["results"] == {"d", "e", "f"}
    assert recover(tmp_path, retry_errors=True)["errors"] == set()
    assert list(tmp_path.glob("errors-retried-*.jsonl"))


def test_store_writes_a_partial_shard_once_flush_seconds_pass(tmp_path):
    with RegenStore(tmp_path, "r", flush_rows=100, flush_seconds=0.001) as store:
        store.add_result({"id": "a"})
        time.sleep(0.01)
        store.maybe_flush()  # what the stage's ticker calls twice a second
        assert [p.name for p in tmp_path.glob("results-*.parquet")] == ["results-r-00000.parquet"]


def test_store_refuses_a_corrupted_middle_line(tmp_path):
    (tmp_path / "skipped.jsonl").write_text('not json\n{"id": "c"}\n')
    with pytest.raises(DraftsetError, match="line 1"):
        recover(tmp_path)


def test_prompt_length_in_target_tokens(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    measure = length_function("tokens", str(tmp_path / "tokenizer.json"))
    assert measure("hello big world") == 3 and length_function("chars", None)("hello") == 5
    with pytest.raises(DraftsetError, match="cannot load tokenizer"):
        length_function("tokens", str(tmp_path / "missing.json"))


def test_progress_file_reports_rates_eta_and_endpoints(tmp_path):
    progress = RegenProgress(tmp_path, "m", "run-1", total=10, show=False)
    progress.started -= 4.0  # as if the run had been going for 4 s
    for _ in range(4):
        progress.request_done(completion_tokens=50)
        progress.row_done("results")
    progress.row_done("resumed")
    progress.tick(force=True)
    snap = json.loads((tmp_path / "progress.json").read_text())
    assert snap["state"] == "running" and snap["pid"] == os.getpid()
    assert (snap["results"], snap["resumed"], snap["total"]) == (4, 1, 10)
    assert snap["mean_completion_tokens"] == 50.0 and snap["req_s"] == pytest.approx(1.0, rel=0.1)
    assert snap["tok_s"] == pytest.approx(50.0, rel=0.1) and snap["eta_s"] == pytest.approx(5, abs=1)
    assert hms(3725) == "1:02:05" and hms(None) == "?"
