"""Training: the draft learns the target's next token; checkpoints and exports carry the convention."""

import json
import shutil

import pytest
import torch
from safetensors import safe_open

from catalog.errors import DraftsetError
from pipeline.capture.manifest import CaptureManifest
from pipeline.capture.store import CaptureReader
from pipeline.train.data import split_ids
from pipeline.train.export import load_exported
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, _shift, ttt_steps
from tests.kits.draft_toy import plain_config


def unigram_baseline(toy) -> float:
    """Accuracy of always guessing the target's most frequent next token on the counted positions."""
    m = CaptureManifest.load(toy.capture)
    target = FrozenTarget.from_model_dir(toy.model, m.rms_norm_eps)
    counts = torch.zeros(m.vocab_size)
    for _, s in CaptureReader(toy.capture):
        tok = target.logits(s["last"].float()).argmax(-1)[:-1]
        counts += torch.bincount(tok[s["loss_mask"][1:].bool()], minlength=m.vocab_size)
    return float(counts.max() / counts.sum())


def test_draft_predicts_target_far_above_unigram(toy):
    metrics = json.loads((toy.draft / "train" / "checkpoint" / "resolved.json").read_text())["metrics"]
    acc, base = metrics["train_step_accuracy"], unigram_baseline(toy)
    print(
        f"\ntoy draft on its training captures: step accuracy {[round(a, 3) for a in acc]}, unigram baseline {base:.3f}"
    )
    assert acc[0] > 4 * base and acc[0] > base + 0.2
    assert all(a > 2 * base for a in acc)  # later TTT steps learned too


def test_checkpoint_and_export_carry_the_manifest(toy):
    m = CaptureManifest.load(toy.capture)
    resolved = json.loads((toy.draft / "train" / "checkpoint" / "resolved.json").read_text())
    assert CaptureManifest.model_validate(resolved["capture_manifest"]) == m
    assert resolved["train"]["ttt_steps"] == 3 and resolved["draft"]["n_aux"] == len(m.taps.aux)
    cfg = json.loads((toy.draft / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLMEagle3"]
    assert cfg["eagle_config"] == {
        "eagle_aux_hidden_state_layer_ids": [j - 1 for j in m.taps.aux],
        "use_aux_hidden_state": True,
    }
    assert cfg["eagle_aux_hidden_state_layer_ids"] == m.taps.aux
    assert cfg["target_hidden_size"] == m.hidden_size and cfg["vocab_size"] == m.vocab_size
    assert cfg["draft_vocab_size"] == 256 and cfg["num_hidden_layers"] == 1
    assert CaptureManifest.load(toy.draft) == m  # manifest round-trips
    with safe_open(str(toy.draft / "model.safetensors"), framework="pt") as f:
        keys = set(f.keys())
        assert f.get_tensor("fc.weight").dtype == torch.bfloat16
        assert tuple(f.get_tensor("fc.weight").shape) == (m.hidden_size, 3 * m.hidden_size)
        assert tuple(f.get_tensor("midlayer.self_attn.q_proj.weight").shape)[1] == 2 * m.hidden_size
    assert {"fc.weight", "norm.weight", "lm_head.weight", "d2t", "t2d"} <= keys
    assert all(k.startswith(("midlayer.", "fc.", "norm.", "lm_head.")) or k in ("d2t", "t2d") for k in keys)
    draft, manifest, _ = load_exported(toy.draft)
    assert manifest == m and int(draft.t2d.sum()) == 256


def test_loss_counts_exactly_the_shifted_mask():
    """Step k at position t is scored on token t+k+2: a single trainable token at index i is counted
    once per step with i-k-2 >= 0 and never past the row's end."""
    from pipeline.train.draft_model import DraftConfig, Eagle3Draft

    torch.manual_seed(0)
    draft = Eagle3Draft(DraftConfig.tiny())
    draft.t2d.fill_(True)
    target = FrozenTarget.random(40, 16, dtype=torch.float32)
    L = 10
    for i in (0, 1, 2, 5, 9):
        mask = torch.zeros(1, L, dtype=torch.bool)
        mask[0, i] = True
        batch = Batch(torch.randint(0, 40, (1, L)), mask, torch.randn(1, L, 48), torch.randn(1, L, 16))
        counts = [int(s.count) for s in ttt_steps(draft, target, batch, 4)]
        assert counts == [int(i - k - 2 >= 0) for k in range(4)], (i, counts)
    assert _shift(torch.arange(5)[None], 2).tolist() == [[2, 3, 4, 0, 0]]


def test_train_reads_the_target_from_model_when_it_moved(toy, tmp_path):
    """On a GPU host the capture's recorded model_dir does not exist: --model supplies shape and head,
    and rows not trained in this run are counted, never lost."""
    from pipeline.train.loop import run_train

    cap = tmp_path / "cap"
    shutil.copytree(toy.capture, cap)
    manifest = json.loads((cap / "capture_manifest.json").read_text())
    manifest["model_dir"] = str(tmp_path / "moved-away")
    (cap / "capture_manifest.json").write_text(json.dumps(manifest))
    run_train(
        plain_config(
            capture_dir=cap,
            out_dir=tmp_path / "draft",
            model_dir=toy.model,
            max_steps=1,
            batch_tokens=128,
            ttt_steps=1,
            heldout_every=0,
            device="cpu",
        )
    )
    counts = json.loads((tmp_path / "draft" / "train" / "stats.json").read_text())["counts"]
    n = len(CaptureReader(cap).ids())
    assert counts["in"] == n and 0 < counts["out"] < n and counts["heldout"] == 0
    assert counts["out"] + counts["not_trained_here"] == n
    with pytest.raises(DraftsetError, match="no config.json"):
        run_train(plain_config(capture_dir=cap, out_dir=tmp_path / "d2", max_steps=1, device="cpu"))


def test_split_never_reports_trained_samples_as_heldout():
    class Ids:
        def ids(self):
            return ["a", "b", "c"]

    assert split_ids(Ids(), 1) == (["a", "b", "c"], [])  # every id hashes to held-out
    train, held = split_ids(Ids(), 0)
    assert train == ["a", "b", "c"] and held == []


def test_train_writes_its_manifest_through_the_stage_base(toy):
    manifest = json.loads((toy.draft / "train" / "manifest.json").read_text())
    assert manifest["stage"] == "train" and manifest["counts"]["out"] > 0
    assert "checkpoint/draft.safetensors" in manifest["outputs"] and manifest["metrics"]["steps"] > 0
    assert manifest["upstream"][0]["stage"] == "capture"  # the capture's own stage record, forwarded
