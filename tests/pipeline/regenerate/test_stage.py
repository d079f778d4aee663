"""The regenerate stage over real loopback HTTP (fake OpenAI servers from tests/kits/fake_openai.py)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from regen_helpers import conversation, simple_mix, write_mix

from adapters.records import Conversation
from catalog.db import Catalog
from catalog.errors import DraftsetError, ZeroOutput
from pipeline.regenerate.config import RegenConfig
from pipeline.regenerate.run import regen_dir, run_regenerate


def _config(urls, **extra) -> RegenConfig:
    base = {
        "mix": "m",
        "endpoints": urls,
        "retry": {"backoff_s": 0.01, "max_attempts": 3, "timeout_s": 2.0},
        "partitions": [
            {"name": "short", "max_prompt": 60, "concurrency": 4, "max_tokens": 32},
            {"name": "long", "max_prompt": None, "concurrency": 2, "max_tokens": 64},
        ],
    }
    return RegenConfig.model_validate({**base, **extra})


def _outputs(home):
    out = regen_dir(home, "m")
    rows = [r for p in sorted(out.glob("results-*.parquet")) for r in pq.read_table(p).to_pylist()]

    def read(name):
        return [json.loads(x) for x in (out / name).read_text().splitlines()] if (out / name).exists() else []

    return rows, read("errors.jsonl"), read("skipped.jsonl")


def _assert_accounted(home, convs):
    rows, errors, skipped = _outputs(home)
    ids = [r["id"] for r in rows] + [e["id"] for e in errors] + [s["id"] for s in skipped]
    assert len(ids) == len(set(ids)), "an id was written twice"
    assert set(ids) == {c.id for c in convs}, "an id was lost"
    return rows, errors, skipped


def test_multi_turn_answers_are_conditioned_on_the_models_own_answers(home, fake_server):
    server = fake_server()
    convs = [
        conversation(
            0,
            [
                ("system", "be terse"),
                ("user", "first question"),
                ("assistant", "ORIGINAL 1"),
                ("user", "second question"),
                ("assistant", "ORIGINAL 2"),
            ],
        )
    ]
    write_mix(home, "m", convs)
    result = run_regenerate(_config([server.url]), home, Catalog(home), show_progress=False)
    assert result.counts["out"] == 1
    first, second = server.behaviour.log
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    [row], _, _ = _outputs(home)
    answer1 = Conversation.model_validate_json(row["conversation"]).messages[2]
    assert second["messages"][2] == {"role": "assistant", "content": answer1.content}
    assert second["messages"][3] == {"role": "user", "content": "second question"}
    assert "ORIGINAL" not in json.dumps(server.behaviour.log)
    # sampling and thinking travel in every request and are stored per row
    assert first["chat_template_kwargs"] == {"enable_thinking": True} and first["separate_reasoning"] is True
    assert first["max_tokens"] == 32 and first["temperature"] == 0.7 and isinstance(first["seed"], int)
    turns = json.loads(row["turns"])
    assert [t["endpoint"] for t in turns] == [server.url] * 2 and row["model"] == "fake/instant-target"
    assert answer1.reasoning and turns[0]["usage"]["completion_tokens"] == 8
    assert row["completion_tokens"] == 16 and row["origin"] == "regenerated"
    assert json.loads(row["sampling"])["thinking"] is True


def test_faulty_server_retries_then_errors_file_and_the_run_completes(home, fake_server):
    # each request: first attempt 500, second stalls past the timeout, third answers;
    # rows with FAILME always get 500 and must end in errors.jsonl after max_attempts.
    server = fake_server(fail_first=1, stall_first=1, stall_s=1.0, fail_marker="FAILME", garbage_marker="JUNK")
    convs = simple_mix(12, marker_rows={3: " FAILME", 8: " FAILME", 10: " JUNK"})
    write_mix(home, "m", convs, rows_per_shard=5)
    result = run_regenerate(
        _config([server.url], retry={"backoff_s": 0.01, "max_attempts": 3, "timeout_s": 0.5}),
        home,
        Catalog(home),
        show_progress=False,
    )
    rows, errors, skipped = _assert_accounted(home, convs)
    assert len(rows) == 9 and not skipped
    by_id = {e["id"]: e for e in errors}
    assert set(by_id) == {convs[3].id, convs[8].id, convs[10].id}
    assert all(
        by_id[c.id]["attempts"] == 3 and by_id[c.id]["last_status"] == 500 and "HTTP 500" in by_id[c.id]["reason"]
        for c in (convs[3], convs[8])
    )
    junk = by_id[convs[10].id]  # HTTP 200 whose body is not a chat completion: retried, then an error
    assert junk["last_status"] == "bad_response" and "not a chat completion" in junk["reason"]
    assert all(json.loads(r["turns"])[0]["attempts"] == 3 for r in rows)  # 500, timeout, then success
    assert result.counts["errors"] == 3 and result.counts["out"] == 9
    [stage] = Catalog(home).query("SELECT status, counts FROM stage_runs WHERE stage = 'regenerate'")
    assert stage["status"] == "ok" and json.loads(stage["counts"])["errors"] == 3


def test_native_rows_pass_through_unchanged_and_bad_rows_are_named(home, fake_server):
    server = fake_server(length_marker="CUTME")
    convs = simple_mix(8, native_every=4, marker_rows={5: " CUTME"})
    convs.append(conversation(50, [("system", "only a system turn"), ("assistant", "x")]))
    convs_dup = convs + [convs[1]]  # the same id twice in the mix: quarantined, counted once
    write_mix(home, "m", convs_dup, raw_overrides={2: {"conversation": '{"id": "broken"'}, 6: {"mode": "native"}})
    result = run_regenerate(_config([server.url]), home, Catalog(home), show_progress=False)
    rows, errors, skipped = _assert_accounted(home, convs)
    by_id = {r["id"]: r for r in rows}
    for native in (convs[0], convs[4]):
        assert by_id[native.id]["origin"] == "native_passthrough"
        assert Conversation.model_validate_json(by_id[native.id]["conversation"]) == native
    assert {e["id"]: e["reason"].split(":")[0] for e in errors} == {
        convs[2].id: "invalid conversation",
        convs[6].id: "mode column 'native' != conversation.mode 'regenerate'",
    }
    assert {s["id"]: s["reason"] for s in skipped} == {convs[5].id: "length_truncated", convs[8].id: "empty_prompt"}
    assert result.counts["dropped_duplicate_id"] == 1 and result.counts["native_passthrough"] == 2
    quarantine = (regen_dir(home, "m") / "quarantine.jsonl").read_text()
    assert convs[1].id in quarantine and "duplicate_id" in quarantine
    assert len(server.behaviour.log) == 4  # rows 1, 3, 5, 7: natives, bad and empty rows never reach it


def test_rerun_resumes_by_id_and_refuses_other_settings(home, fake_server):
    server = fake_server()
    convs = simple_mix(6)
    mix_dir = write_mix(home, "m", convs)
    (mix_dir / "manifest.json").write_text(json.dumps({"stage": "mix", "run_id": "mix-1"}))
    run_regenerate(_config([server.url], max_rows=4), home, None, show_progress=False)
    again = run_regenerate(_config([server.url]), home, None, show_progress=False)
    assert again.counts["skipped_resumed"] == 4 and again.counts["out"] == 2
    assert len(server.behaviour.log) == 6
    _assert_accounted(home, convs)
    manifest = json.loads((regen_dir(home, "m") / "manifest.json").read_text())
    assert manifest["complete"] and manifest["totals"] == {"results": 6, "errors": 0, "skipped": 0}
    assert manifest["stage"] == "regenerate" and manifest["run_id"] == again.run_id
    assert manifest["upstream"] == [{"stage": "mix", "run_id": "mix-1"}]  # the mix's manifest, forwarded
    assert manifest["config"]["mix"] == "m" and manifest["counts"]["skipped_resumed"] == 4
    with pytest.raises(DraftsetError, match="temperature: 0.7 -> 0.0"):
        run_regenerate(_config([server.url], temperature=0.0), home, None, show_progress=False)


def test_requests_spread_over_endpoints(home, fake_server):
    a, b = fake_server(latency_s=0.02), fake_server(latency_s=0.02)
    convs = simple_mix(40)
    write_mix(home, "m", convs)
    run_regenerate(_config([a.url, b.url]), home, None, show_progress=False)
    assert len(a.behaviour.log) + len(b.behaviour.log) == 40
    assert min(len(a.behaviour.log), len(b.behaviour.log)) >= 10  # least-inflight balances equal servers


def test_dead_endpoint_and_missing_mix_are_one_clear_error(home, fake_server):
    write_mix(home, "m", simple_mix(2))
    with pytest.raises(DraftsetError, match=r"http://127.0.0.1:9 is not answering GET /v1/models") as caught:
        run_regenerate(_config([fake_server().url, "http://127.0.0.1:9"]), home, None, show_progress=False)
    assert "serve-dev" in caught.value.hint and "sglang.launch_server" in caught.value.hint
    with pytest.raises(DraftsetError, match="mix 'other' has no shards") as caught:
        run_regenerate(_config(["http://127.0.0.1:9"], mix="other"), home, None, show_progress=False)
    assert "draftset mix other" in caught.value.hint


def test_all_rows_failing_is_zero_output(home, fake_server):
    server = fake_server(fail_marker="question")
    write_mix(home, "m", simple_mix(3))
    with pytest.raises(ZeroOutput):
        run_regenerate(
            _config([server.url], retry={"backoff_s": 0.0, "max_attempts": 2}), home, None, show_progress=False
        )
    assert len(_outputs(home)[1]) == 3


def test_full_disk_stops_with_a_clear_error_and_loses_nothing(home, fake_server, monkeypatch):
    """Fault injection: the shard writer fails as on a full disk (ENOSPC) after the first shard."""
    from pipeline.regenerate import store

    server = fake_server()
    convs = simple_mix(20)
    write_mix(home, "m", convs)
    real_write, calls = store.pq.write_table, []

    def write_then_fill_up(table, where, **kwargs):
        calls.append(where)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        real_write(table, where, **kwargs)

    monkeypatch.setattr(store.pq, "write_table", write_then_fill_up)
    with pytest.raises(DraftsetError, match="No space left on device") as caught:
        run_regenerate(_config([server.url], flush_rows=5), home, Catalog(home), show_progress=False)
    assert "resumes by id" in caught.value.hint
    [failed] = Catalog(home).query("SELECT status, error FROM stage_runs")
    assert failed["status"] == "failed" and "No space left" in failed["error"]
    monkeypatch.setattr(store.pq, "write_table", real_write)
    again = run_regenerate(_config([server.url], flush_rows=5), home, None, show_progress=False)
    assert again.counts["skipped_resumed"] == 5 and again.counts["out"] == 15
    _assert_accounted(home, convs)


def test_mix_without_required_columns_names_the_shard_and_column(home, fake_server):
    write_mix(home, "m", simple_mix(2), raw_overrides={})
    shard = next((home / "data/mix/m").glob("part-*.parquet"))
    table = pq.read_table(shard).drop(["mode"])
    pq.write_table(table, shard)
    with pytest.raises(DraftsetError, match=rf"{shard.name} lacks column\(s\) mode"):
        run_regenerate(_config([fake_server().url]), home, None, show_progress=False)


def test_a_model_the_endpoint_does_not_serve_is_refused_before_any_work(home, fake_server):
    server = fake_server()
    write_mix(home, "m", simple_mix(2))
    with pytest.raises(DraftsetError, match=r"serves \['fake/instant-target'\], not 'kimi'"):
        run_regenerate(_config([server.url], model="kimi"), home, None, show_progress=False)
    assert server.behaviour.log == []


def test_long_prompts_use_their_own_partition(home, fake_server):
    server = fake_server()
    convs = [conversation(0, [("user", "short one")]), conversation(1, [("user", "a long agent trajectory " * 5)])]
    write_mix(home, "m", convs)
    run_regenerate(_config([server.url]), home, None, show_progress=False)
    sent = {req["messages"][0]["content"]: req["max_tokens"] for req in server.behaviour.log}
    assert sent == {"short one": 32, "a long agent trajectory " * 5: 64}
    rows, _, _ = _outputs(home)
    assert {r["id"]: r["partition"] for r in rows} == {convs[0].id: "short", convs[1].id: "long"}


def test_retry_errors_answers_failed_ids_again(home, fake_server):
    convs = simple_mix(4, marker_rows={2: " FLAKY"})
    write_mix(home, "m", convs)
    broken = fake_server(fail_marker="FLAKY")
    run_regenerate(_config([broken.url], retry={"backoff_s": 0.0, "max_attempts": 1}), home, None, show_progress=False)
    assert [e["id"] for e in _outputs(home)[1]] == [convs[2].id]
    fixed = fake_server()
    again = run_regenerate(_config([fixed.url], retry_errors=True), home, None, show_progress=False)
    assert again.counts["out"] == 1 and again.counts["skipped_resumed"] == 3
    rows, errors, _ = _assert_accounted(home, convs)
    assert not errors and len(rows) == 4
    assert list(regen_dir(home, "m").glob("errors-retried-*.jsonl"))  # the old errors are kept, renamed
