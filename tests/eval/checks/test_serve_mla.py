"""The MLA draft draftset trains, as the checks and the speculative decoder see it: `check serve` passes it on
correct SGLang and vLLM commands (0 false alarms), `check draft` and the incremental draft run it as trained."""

import json

import pytest
import torch

from eval.checks.draft_check import check_draft
from eval.checks.serve_check import check_serve
from eval.specdecode.runners import DraftRunner
from pipeline.capture.store import CaptureReader
from pipeline.train.export import load_exported
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import _shift
from tests.kits.draft_toy import train_mla_toy

SG = (
    "python -m sglang.launch_server --model-path {model} --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path {draft} --speculative-num-steps 2 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 3 --context-length 40"
)
VLLM = (
    "vllm serve {model} --max-model-len 40 --speculative-config "
    '\'{{"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 2}}\''
)


@pytest.fixture(scope="module")
def mla(tmp_path_factory):
    return train_mla_toy(tmp_path_factory.mktemp("mla-serve"))


@pytest.mark.parametrize("command", [SG, VLLM], ids=["sglang", "vllm"])
def test_check_serve_passes_the_trained_mla_draft(mla, command):
    model, _, _, draft = mla
    assert json.loads((draft / "config.json").read_text())["architectures"] == ["Eagle3DeepseekV2ForCausalLM"]
    report = check_serve(draft, command.format(model=model, draft=draft))
    assert report.clean, [(f.rule, f.problem) for f in report.findings]


def test_check_serve_still_catches_a_broken_mla_export(mla, tmp_path):
    """The same draft with its MLA fields dropped or its attention keys renamed is refused (mla rules)."""
    import shutil

    from safetensors.torch import load_file, save_file

    model, _, _, draft = mla
    bad = tmp_path / "bad"
    shutil.copytree(draft, bad)
    cfg = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({k: v for k, v in cfg.items() if k != "kv_lora_rank"}))
    assert "mla.config.missing" in {f.rule for f in check_serve(bad, SG.format(model=model, draft=bad)).findings}
    (bad / "config.json").write_text(json.dumps(cfg))
    w = load_file(str(bad / "model.safetensors"))
    save_file({k.replace("kv_b_proj", "kv_up"): v for k, v in w.items()}, str(bad / "model.safetensors"))
    assert "weights.mla.attention" in {f.rule for f in check_serve(bad, SG.format(model=model, draft=bad)).findings}


def test_incremental_mla_draft_is_the_trained_draft(mla):
    """eval's DraftRunner (a committed MLA cache + a speculative chain) gives the training forward's logits."""
    model, _, capture, draft_dir = mla
    draft, manifest, _ = load_exported(draft_dir)
    embed = FrozenTarget.from_model_dir(model, manifest.rms_norm_eps).embed.float()
    reader = CaptureReader(capture)
    sample = reader.load(reader.ids()[0])
    ids, aux = sample["input_ids"].long(), sample["aux"].float()
    t = 20
    runner = DraftRunner(draft, embed, wiring=[0])
    runner.commit([aux[:9]], ids[1:10].tolist())
    runner.commit([aux[9 : t + 1]], ids[10 : t + 2].tolist())
    proposals = runner.propose(3)
    fed = torch.cat([ids[: t + 2], torch.tensor(proposals[:-1])])[None]
    hidden, cache = draft.fuse(torch.cat([aux[: t + 1], aux[: fed.shape[1] - t - 1]])[None]), []
    with torch.no_grad():
        for k, token in enumerate(proposals):
            pos = torch.arange(fed.shape[1]) + k
            logits, hidden = draft.step(torch.nn.functional.embedding(_shift(fed, k + 1), embed), hidden, pos, cache)
            if k == 0:
                assert torch.allclose(runner.last_logits, logits[0, t], atol=1e-4)
            assert int(draft.to_target_ids(logits[0, t].argmax())) == token


def test_check_draft_measures_the_mla_draft(mla):
    model, _, capture, draft = mla
    report = check_draft(draft, capture, model, max_samples=4, max_new=8)
    assert report.train.accept_length >= 1.0 and report.wirings  # the target's forward, every wiring, run
    assert report.wirings[0].hf_ids == report.train.hf_ids


def test_loader_limits_of_mla_drafts_are_warned_per_engine(mla, tmp_path):
    """No q_lora_rank: newer SGLang's kimi_k25_eagle3.py refuses it; a rope_theta other than 10000 without
    rope_scaling: vLLM's Eagle3 DeepseekV2 layer rotates at base 10000. Each is said for its engine only."""
    import shutil

    model, _, _, draft = mla
    bad = tmp_path / "bad"
    shutil.copytree(draft, bad)
    cfg = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**cfg, "q_lora_rank": None}))
    sglang, vllm = (check_serve(bad, c.format(model=model, draft=bad)) for c in (SG, VLLM))
    (f,) = [f for f in sglang.findings if f.rule == "mla.q_lora.missing"]
    assert f.severity == "warning" and "kimi_k25_eagle3.py" in f.source
    assert "mla.q_lora.missing" not in {f.rule for f in vllm.findings}
    rope = {
        **cfg,
        "rope_theta": 50000.0,
        "draftset": {**cfg["draftset"], "rope": {"rope_theta": 50000.0, "rope_scaling": None}},
    }
    (bad / "config.json").write_text(json.dumps(rope))
    sglang, vllm = (check_serve(bad, c.format(model=model, draft=bad)) for c in (SG, VLLM))
    (g,) = [f for f in vllm.findings if f.rule == "mla.rope.vllm_base"]
    assert "base 10000" in g.why and "50000" in g.problem
    assert "mla.rope.vllm_base" not in {f.rule for f in sglang.findings}


def test_speculative_decoding_with_the_mla_draft_is_greedy_decoding(mla):
    """`check accept-length`'s decoder on the DeepSeek-V3 target (its KV cache cropped after rejections) with the
    MLA draft proposing: every output token equals plain greedy decoding."""
    from eval.specdecode.evaluate import measure

    model, _, capture, draft = mla
    r = measure(draft, capture, model, steps=[2], n_prompts=2, max_new=10, with_wrong=False, device="cpu")
    (run,) = r.runs
    assert run.ties == 0 and run.n_tokens == r.greedy_tokens > 0  # measure raises on a real difference
    assert run.accept_length >= 1.0 and len(run.step_acceptance) == 2
