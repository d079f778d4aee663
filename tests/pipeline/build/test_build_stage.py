"""`draftset build` end to end on a real DuckDB catalog and parquet shards."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from catalog.db import Catalog
from catalog.errors import DraftsetError
from catalog.shards import RECORD_SCHEMA, ParquetShardWriter
from pipeline.build.run import run_build
from pipeline.rows.codec import to_row


@pytest.fixture()
def mix(home, conversation):
    """A native-only mix: 3 good conversations (4 assistant turns) and 3 bad rows."""
    convs = [
        conversation("c-0", [("user", "Hello there"), ("assistant", "Hi! How can I help?")]),
        conversation(
            "c-1",
            [
                ("system", "Be brief."),
                ("user", "2+2?"),
                ("assistant", "4", "adding"),
                ("user", "3+3?"),
                ("assistant", "6"),
            ],
        ),
        conversation("c-2", [("user", "Write code"), ("assistant", "print('hi')")]),
        conversation("c-3", [("user", "Only a prompt")]),
        conversation("c-4", [("user", "needs an answer"), ("assistant", "old answer")], mode="regenerate"),
    ]
    rows = [to_row(c) for c in convs]
    rows.append(to_row(convs[0]) | {"id": "broken-5", "conversation": '{"id": "broken-5", "messages": 3}'})
    with ParquetShardWriter(home / "data" / "mix" / "m1", RECORD_SCHEMA) as writer:
        writer.write_many(rows)
    return "m1"


def _build(home, toy_dir, name, **kwargs):
    return run_build(home, name, model_dir=toy_dir, catalog=Catalog(home), **kwargs)


def test_build_writes_rows_vocab_and_manifest(home, toy_dir, mix, tokenizer):
    result = _build(home, toy_dir, mix, draft_vocab_size=100)
    c = result.counts
    assert (c["in"], c["out"]) == (6, 4)
    assert (c["dropped_no_assistant_turn"], c["dropped_not_regenerated"], c["dropped_invalid_conversation"]) == (
        1,
        1,
        1,
    )
    quarantine = [json.loads(line) for line in (result.out_dir / "quarantine.jsonl").read_text().splitlines()]
    assert sorted((q["id"], q["reason"]) for q in quarantine) == [
        ("broken-5", "invalid_conversation"),
        ("c-3", "no_assistant_turn"),
        ("c-4", "not_regenerated"),
    ]

    table = pq.read_table(result.out_dir / "rows-00000.parquet")
    assert sorted(table["id"].to_pylist()) == ["c-0#t1", "c-1#t2", "c-1#t4", "c-2#t1"]
    assert str(table.schema.field("input_ids").type) == "list<element: int32>"
    assert str(table.schema.field("loss_mask").type) == "list<element: int8>"
    for row in table.to_pylist():
        assert row["n_tokens"] == len(row["input_ids"]) == len(row["loss_mask"])
        assert row["n_trainable"] == sum(row["loss_mask"]) > 0

    from safetensors.numpy import load_file

    vocab = load_file(str(result.out_dir / "vocab.safetensors"))
    masked = np.concatenate([np.array(r["input_ids"])[np.array(r["loss_mask"], bool)] for r in table.to_pylist()])
    assert vocab["token_counts"].tolist() == np.bincount(masked, minlength=len(tokenizer)).tolist()
    assert vocab["t2d"].sum() == 100 and vocab["t2d"][np.arange(100) + vocab["d2t"]].all()
    assert vocab["t2d"][np.unique(masked)].all()  # fewer distinct trained ids than K: all of them are in

    m = json.loads((result.out_dir / "manifest.json").read_text())
    assert m["n_rows"] == 4 and m["n_tokens"] == sum(table["n_tokens"].to_pylist())
    assert m["n_trainable"] == len(masked) and m["draft_vocab_size"] == 100 and m["vocab_size"] == len(tokenizer)
    assert m["thinking"] is True and m["system_prompt"] is None and m["max_length"] == 2048
    import hashlib

    assert m["chat_template_sha256"] == hashlib.sha256(tokenizer.chat_template.encode()).hexdigest()
    [run] = Catalog(home).query("SELECT status, counts FROM stage_runs WHERE stage = 'build'")
    assert run["status"] == "ok" and json.loads(run["counts"])["out"] == 4


def test_rerun_resumes_by_id_and_refuses_changed_settings(home, toy_dir, mix):
    first = _build(home, toy_dir, mix)
    again = _build(home, toy_dir, mix)
    assert again.counts["skipped_already_built"] == 3 and again.counts["out"] == 0
    assert again.manifest["n_rows"] == first.manifest["n_rows"] == 4
    assert len(list(again.out_dir.glob("rows-*.parquet"))) == 1
    assert _build(home, toy_dir, mix, draft_vocab_size=7).manifest["draft_vocab_size"] == 7  # vocab only: no rebuild
    with pytest.raises(DraftsetError, match="different settings \\(max_length\\)"):
        _build(home, toy_dir, mix, max_length=512)
    rebuilt = _build(home, toy_dir, mix, max_length=512, overwrite=True)
    assert rebuilt.counts["out"] == 4 and rebuilt.manifest["max_length"] == 512


def test_truncation_is_counted_and_answerless_rows_dropped(home, toy_dir, mix):
    full = pq.read_table(_build(home, toy_dir, mix).out_dir / "rows-00000.parquet").to_pylist()
    starts = {r["id"]: r["loss_mask"].index(1) for r in full}
    limit = sorted(starts.values())[1] + 1  # keeps one answer token of the two shortest contexts
    result = _build(home, toy_dir, mix, max_length=limit, overwrite=True)
    kept = {rid for rid, start in starts.items() if start < limit}
    assert result.counts["truncated"] == sum(r["n_tokens"] > limit for r in full)
    assert result.counts["dropped_no_trainable_tokens"] == 4 - len(kept) and result.counts["out"] == len(kept) >= 2
    rows = pq.read_table(result.out_dir / "rows-00000.parquet").to_pylist()
    assert {r["id"] for r in rows} == kept and max(r["n_tokens"] for r in rows) <= limit
    assert all(r["loss_mask"][: starts[r["id"]]] == [0] * starts[r["id"]] for r in rows)


def test_all_turns_one_row_and_regen_input_inherits_thinking(home, toy_dir, conversation):
    regen = home / "data" / "regen" / "r1"
    conv = conversation(
        "c-7", [("user", "a"), ("assistant", "b", "t"), ("user", "c"), ("assistant", "d")], mode="regenerate"
    )
    with ParquetShardWriter(regen, RECORD_SCHEMA, prefix="results") as writer:
        writer.write(to_row(conv))
    (regen / "config.json").write_text(json.dumps({"stage": "regenerate", "thinking": False}))
    (regen / "manifest.json").write_text(json.dumps({"complete": False}))
    result = _build(home, toy_dir, "r1", per_turn=False)
    assert result.manifest["thinking"] is False and result.manifest["rows"] == "all turns in one row"
    assert result.manifest["source_complete"] is False
    [row] = pq.read_table(result.out_dir / "rows-00000.parquet").to_pylist()
    assert row["id"] == "c-7" and row["turn"] is None


def test_build_reads_and_forwards_the_regeneration_manifest(home, toy_dir, conversation):
    """The settings come from regenerate's manifest (no config.json needed), which build forwards as upstream."""
    regen = home / "data" / "regen" / "r2"
    conv = conversation("c-8", [("user", "a"), ("assistant", "b", "t")], mode="regenerate")
    with ParquetShardWriter(regen, RECORD_SCHEMA, prefix="results") as writer:
        writer.write(to_row(conv))
    upstream = {
        "stage": "regenerate",
        "run_id": "regenerate-1",
        "config": {"mix": "r2", "thinking": False},
        "complete": True,
        "upstream": [{"stage": "mix", "run_id": "mix-1"}],
    }
    (regen / "manifest.json").write_text(json.dumps(upstream))
    result = _build(home, toy_dir, "r2")
    assert result.manifest["thinking"] is False and result.manifest["source_complete"] is True
    assert result.manifest["upstream"] == [upstream]
    on_disk = json.loads((result.out_dir / "manifest.json").read_text())
    assert on_disk["stage"] == "build" and on_disk["upstream"][0]["upstream"][0]["run_id"] == "mix-1"
    assert on_disk["config"]["thinking"] is False and on_disk["counts"]["out"] == result.counts["out"] == 1


def test_non_prefix_stable_template_raises_naming_the_row(home, toy_dir, mix, tmp_path):
    import shutil

    bad = tmp_path / "bad-model"
    shutil.copytree(toy_dir, bad)
    for name in ("chat_template.jinja", "tokenizer_config.json"):
        path = bad / name
        path.write_text(
            path.read_text().replace(
                "<|im_assistant|>assistant<|im_middle|><think>", "<|im_assistant|>bot<|im_middle|><think>"
            )
        )
    with pytest.raises(DraftsetError, match=r"row c-0 \(hand/written default/train row 0\).*not prefix-stable"):
        run_build(home, mix, model_dir=bad, catalog=Catalog(home))
    [run] = Catalog(home).query("SELECT status, error FROM stage_runs WHERE stage = 'build'")
    assert run["status"] == "failed" and "prefix-stable" in run["error"]


def test_missing_input_says_what_to_run(home, toy_dir):
    with pytest.raises(DraftsetError, match="nothing to build for 'nope'") as info:
        _build(home, toy_dir, "nope")
    assert "draftset regenerate nope" in info.value.hint


def test_cli_build_prints_a_table(home, toy_dir, mix):
    from typer.testing import CliRunner

    from pipeline.cli.app import app

    result = CliRunner().invoke(app, ["build", mix, "--model", str(toy_dir), "--draft-vocab-size", "50"])
    assert result.exit_code == 0, result.output
    assert "build m1" in result.output and json.loads((home / "data/build/m1/manifest.json").read_text())["n_rows"] == 4
    again = CliRunner().invoke(app, ["build", mix, "--model", str(toy_dir), "--draft-vocab-size", "50", "--json"])
    (row,) = json.loads(again.stdout)["tables"][0]["rows"]  # a resumed build, as numbers
    assert (
        row["rows_total"] == 4 and row["rows_written"] == 0 and isinstance(row["draft_vocab_coverage_fraction"], float)
    )


def test_only_unregenerated_rows_is_a_zero_output_error(home, toy_dir, conversation):
    from catalog.errors import ZeroOutput

    conv = conversation("c-9", [("user", "q"), ("assistant", "dataset answer")], mode="regenerate")
    with ParquetShardWriter(home / "data" / "mix" / "m2", RECORD_SCHEMA) as writer:
        writer.write(to_row(conv))
    with pytest.raises(ZeroOutput, match="dropped_not_regenerated=1"):
        _build(home, toy_dir, "m2")


def test_row_the_template_cannot_render_is_quarantined(home, toy_dir, conversation, tmp_path):
    import shutil

    # A valid record that this target's template refuses (as real templates do, with raise_exception).
    target = tmp_path / "strict-template-target"
    shutil.copytree(toy_dir, target)
    template = target / "chat_template.jinja"
    refuse = (
        "{% for m in messages %}{% if 'forbidden' in m['content'] %}{{ raise_exception('no') }}{% endif %}{% endfor %}"
    )
    template.write_text(refuse + template.read_text())
    good = conversation("c-10", [("user", "q"), ("assistant", "a")])
    bad = conversation("c-11", [("user", "a forbidden question"), ("assistant", "a")])
    with ParquetShardWriter(home / "data" / "mix" / "m3", RECORD_SCHEMA) as writer:
        writer.write_many([to_row(good), to_row(bad)])
    result = _build(home, target, "m3")
    assert result.counts["out"] == 1 and result.counts["dropped_template_error"] == 1
    [entry] = [json.loads(line) for line in (result.out_dir / "quarantine.jsonl").read_text().splitlines()]
    assert entry["id"] == "c-11" and entry["reason"] == "template_error" and entry["detail"]


def test_input_without_rows_or_with_a_foreign_shard_is_refused(home, toy_dir):
    import pyarrow as pa

    empty = home / "data" / "mix" / "m4"
    empty.mkdir(parents=True)
    pq.write_table(RECORD_SCHEMA.empty_table(), empty / "part-00000.parquet")
    with pytest.raises(DraftsetError, match="has no rows in part-\\*.parquet shards") as info:
        _build(home, toy_dir, "m4")
    assert info.value.hint == "re-run: draftset mix m4"
    pq.write_table(pa.table({"id": ["x"], "text": ["no conversation"]}), empty / "part-00001.parquet")
    with pytest.raises(DraftsetError, match="part-00001.parquet has no column conversation"):
        _build(home, toy_dir, "m4")
