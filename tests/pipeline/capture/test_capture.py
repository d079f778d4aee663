"""Capture: exact bytes per token, values equal to transformers' hidden states, resume, quarantine, disk."""

import json
import shutil as _shutil
from collections import namedtuple

import pytest
import torch

from catalog.errors import DraftsetError, ZeroOutput
from pipeline.capture.manifest import CaptureManifest
from pipeline.capture.run import CaptureConfig, run_capture
from pipeline.capture.store import CaptureReader
from tests.kits.draft_toy import DEVICE, HIDDEN, LAYERS, VOCAB, make_build


def test_bytes_per_token_are_exactly_the_convention(toy):
    m = CaptureManifest.load(toy.capture)
    n_aux = len(m.taps.aux)
    assert m.hidden_bytes_per_token == (n_aux + 1) * HIDDEN * 2
    total = 0
    for _, s in CaptureReader(toy.capture):
        L = s["input_ids"].numel()
        assert s["aux"].dtype == s["last"].dtype == torch.bfloat16  # no fp32
        assert tuple(s["aux"].shape) == (L, n_aux * HIDDEN)  # no extra layers
        assert tuple(s["last"].shape) == (L, HIDDEN)
        total += s["aux"].nbytes + s["last"].nbytes
    assert total == m.n_tokens * m.hidden_bytes_per_token == m.hidden_bytes
    overhead = m.file_bytes - total - 5 * m.n_tokens  # ids int32 + mask int8
    assert 0 < overhead < 0.05 * m.file_bytes  # only safetensors headers


def test_captured_states_are_the_convention(toy):
    from transformers import AutoModelForCausalLM

    m = CaptureManifest.load(toy.capture)
    assert m.taps.aux == [2, LAYERS // 2, LAYERS - 3] and m.n_layers == LAYERS
    model = AutoModelForCausalLM.from_pretrained(toy.model, dtype=torch.float32).eval()
    sample_id, s = next(iter(CaptureReader(toy.capture)))
    with torch.no_grad():
        out = model(input_ids=s["input_ids"].long()[None], output_hidden_states=True)

    def rel(ids):
        ref = torch.cat([out.hidden_states[j][0] for j in ids], -1)
        return float((s["aux"].float() - ref).norm() / ref.norm())

    assert rel(m.taps.aux) < (1e-2 if DEVICE == "cpu" else 6e-2)  # bf16 storage (and bf16 compute on CUDA)
    for wrong in ([j + 1 for j in m.taps.aux], [j - 1 for j in m.taps.aux]):
        assert rel(wrong) > 5 * rel(m.taps.aux)  # it is these layers, not their neighbours
    # the verifier state is pre-norm: final norm + lm_head on it reproduces the target's logits
    logits = model.lm_head(model.model.norm(s["last"].float()))
    assert (logits.argmax(-1) == out.logits[0].argmax(-1)).float().mean() > 0.95
    assert not torch.allclose(s["last"].float(), out.hidden_states[-1][0], atol=1e-2)  # HF's index n is post-norm


def _bad_row(row_id: str, input_ids: list[int], loss_mask: list[int]) -> dict:
    """A build row as a broken writer would leave it; its counts follow from its ids, as a build's do."""
    return {
        "id": row_id,
        "conversation_id": row_id,
        "input_ids": input_ids,
        "loss_mask": loss_mask,
        "n_tokens": len(input_ids),
        "n_trainable": sum(loss_mask),
    }


def test_resume_by_id_and_bad_rows_quarantined(toy, tmp_path):
    # ids outside the vocabulary; a mask that trains nothing; a mask one token short of its ids
    bad = [
        _bad_row("oov", [1, VOCAB + 5, 2], [0, 1, 1]),
        _bad_row("nomask", [1, 2, 3], [0, 0, 0]),
        _bad_row("short", [1, 2, 3], [1, 1]),
    ]
    build = make_build(tmp_path / "build", n_rows=6, bad_rows=bad)
    cfg = CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=tmp_path / "cap", device="cpu")
    first = run_capture(cfg)
    assert first.n_samples == 6
    reasons = [json.loads(line)["reason"] for line in (tmp_path / "cap" / "quarantine.jsonl").read_text().splitlines()]
    assert sorted(reasons) == ["mask_length_mismatch", "no_trainable_tokens", "token_out_of_vocab"]
    shards = sorted((tmp_path / "cap").glob("shard-*.safetensors"))
    run_capture(cfg)  # resume: nothing new written
    stats = json.loads((tmp_path / "cap" / "stats.json").read_text())["counts"]
    assert stats["skipped_already_captured"] == 6 and stats["out"] == 0
    assert sorted((tmp_path / "cap").glob("shard-*.safetensors")) == shards


def test_rerun_with_other_taps_is_refused_by_name(toy, tmp_path):
    """Resuming into a folder captured with another wiring would mix two tap sets under one manifest."""
    build = make_build(tmp_path / "build", n_rows=4)
    out = tmp_path / "cap"
    first = run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=out, device="cpu"))
    shards = sorted(out.glob("shard-*.safetensors"))
    default = first.taps.aux
    # the default taps spelled out are the same wiring: resumed, nothing recaptured
    same = run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=out, device="cpu", layers=default))
    assert same.taps.aux == default and sorted(out.glob("shard-*.safetensors")) == shards
    other = [1, 3, 5]
    with pytest.raises(DraftsetError) as err:
        run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=out, device="cpu", layers=other))
    message = str(err.value)
    assert "\n" not in message and f"taps: {json.dumps(default)} -> {json.dumps(other)}" in message
    assert "model" not in message.split("(")[1].split(")")[0]  # only what changed is named
    assert "--fresh" in (err.value.hint or "")
    assert sorted(out.glob("shard-*.safetensors")) == shards  # nothing was written
    assert CaptureManifest.load(out).taps.aux == default
    with pytest.raises(DraftsetError, match=r"dtype: float32 -> bfloat16"):
        run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=out, device="cpu", dtype="bfloat16"))
    # --fresh starts over with the new wiring
    again = run_capture(
        CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=out, device="cpu", layers=other), fresh=True
    )
    assert again.taps.aux == other and again.n_samples == 4
    stage = json.loads((out / "manifest.json").read_text())
    assert stage["stage"] == "capture" and stage["taps"] == other and stage["upstream"][0]["n_rows"] == 4


def test_non_finite_samples_are_quarantined(toy, tmp_path):
    from safetensors.torch import load_file, save_file

    model = tmp_path / "model"
    _shutil.copytree(toy.model, model)
    weights = load_file(str(model / "model.safetensors"))
    weights["model.embed_tokens.weight"][7] = float("inf")  # every row containing token 7 goes NaN
    save_file(weights, str(model / "model.safetensors"), metadata={"format": "pt"})
    build = make_build(tmp_path / "build", n_rows=8)
    m = run_capture(CaptureConfig(build_dir=build, model_dir=model, out_dir=tmp_path / "cap", device="cpu"))
    quarantined = (tmp_path / "cap" / "quarantine.jsonl").read_text().splitlines()
    assert quarantined and all(json.loads(q)["reason"] == "non_finite" for q in quarantined)
    assert m.n_samples + len(quarantined) == 8
    for _, s in CaptureReader(tmp_path / "cap"):
        assert 7 not in s["input_ids"].tolist()


def test_all_rows_bad_raises_zero_output(toy, tmp_path):
    build = make_build(
        tmp_path / "build",
        n_rows=0,
        bad_rows=[_bad_row("a", [], [])],
    )
    with pytest.raises(ZeroOutput):
        run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=tmp_path / "cap", device="cpu"))


def test_disk_preflight_refuses_with_numbers(toy, tmp_path, monkeypatch):
    build = make_build(tmp_path / "build", n_rows=4)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr("pipeline.capture.run.shutil.disk_usage", lambda _p: Usage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(DraftsetError, match=r"capture needs ~.* GB for .* tokens .* 0\.00 GB free"):
        run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=tmp_path / "cap", device="cpu"))
    assert not list((tmp_path / "cap").glob("shard-*"))


def test_unreadable_build_shard_is_a_clear_error(toy, tmp_path):
    build = make_build(tmp_path / "build", n_rows=2)
    (build / "rows-00001.parquet").write_bytes(b"not parquet")
    with pytest.raises(DraftsetError, match="rows-00001.parquet is unreadable"):
        run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=tmp_path / "cap", device="cpu"))


def test_missing_build_manifest_or_model_fields_are_clear_errors(toy, tmp_path):
    build = make_build(tmp_path / "build", n_rows=2)
    (build / "manifest.json").unlink()  # its serving facts must not be guessed
    with pytest.raises(DraftsetError, match="no readable manifest.json"):
        run_capture(CaptureConfig(build_dir=build, model_dir=toy.model, out_dir=tmp_path / "cap", device="cpu"))
    model = tmp_path / "model"
    model.mkdir()
    cfg = json.loads((toy.model / "config.json").read_text())
    del cfg["num_hidden_layers"]  # e.g. a multimodal wrapper's config
    (model / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(DraftsetError, match=r"lacks integer field\(s\) \['num_hidden_layers'\]"):
        run_capture(CaptureConfig(build_dir=build, model_dir=model, out_dir=tmp_path / "cap", device="cpu"))


def test_length_batches_respect_the_padded_budget():
    from pipeline.capture.runtime import length_batches

    lengths = [5, 1, 9, 3, 3, 20, 2]
    batches = length_batches(lengths, lambda n: n, 10)
    assert sorted(n for b in batches for n in b) == sorted(lengths)  # nothing lost
    assert all(max(b) * len(b) <= 10 for b in batches if len(b) > 1)
    assert batches[-1] == [20]  # too long: alone, not dropped
    assert [b for b in batches if len(b) > 1][0] == [1, 2, 3]  # shortest first
