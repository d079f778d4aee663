"""The MLA draft (Eagle3DeepseekV2ForCausalLM) for DeepSeek-V3/Kimi-shaped targets: the attention is DeepSeek's
MLA as transformers computes it, the target's architecture picks it, training runs offline and online, and the
export reloads into the very logits it was trained to."""

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from catalog.errors import DraftsetError
from pipeline.capture.manifest import CaptureManifest
from pipeline.capture.store import CaptureReader
from pipeline.train.draft_arch import MLA_ARCHITECTURE, choose_arch, exported_draft_config
from pipeline.train.draft_mla import ENGINE_ROPE_THETA, DraftMLAConfig
from pipeline.train.draft_model import Eagle3Draft
from pipeline.train.export import load_exported
from pipeline.train.ttt import collate
from tests.kits.draft_toy import make_dsv3, plain_config, train_mla_toy

MLA_KEYS = ("q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj")


def _mla_config(q_lora_rank: int | None, hidden: int = 32) -> DraftMLAConfig:
    return DraftMLAConfig(
        hidden_size=hidden,
        target_hidden_size=hidden,
        n_aux=3,
        num_attention_heads=4,
        q_lora_rank=q_lora_rank,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=12,
        intermediate_size=64,
        rms_norm_eps=1e-6,
        rope_theta=ENGINE_ROPE_THETA,
        vocab_size=50,
        draft_vocab_size=40,
        max_position_embeddings=64,
    )


@pytest.mark.parametrize("q_lora_rank", [24, None])
def test_mla_attention_is_transformers_deepseek_v3_attention(q_lora_rank):
    """Same weights, same input: the draft's MLA (step 0, causal) equals transformers' DeepseekV3Attention, whose
    interleaved rope, latent norms and per-head split are what the engines' MLA kernels reproduce."""
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

    torch.manual_seed(0)
    c = _mla_config(q_lora_rank)
    mine = c.attention().eval()
    # HF's layer reads its input width from hidden_size: 2H, the draft's [embed; hidden] input
    hf_cfg = DeepseekV3Config(
        hidden_size=2 * c.hidden_size,
        num_attention_heads=c.num_attention_heads,
        num_key_value_heads=c.num_attention_heads,
        q_lora_rank=q_lora_rank,
        kv_lora_rank=c.kv_lora_rank,
        qk_nope_head_dim=c.qk_nope_head_dim,
        qk_rope_head_dim=c.qk_rope_head_dim,
        v_head_dim=c.v_head_dim,
        rms_norm_eps=c.rms_norm_eps,
        rope_theta=c.rope_theta,
        max_position_embeddings=64,
        attention_bias=False,
    )
    hf_cfg._attn_implementation = "sdpa"
    hf = DeepseekV3Attention(hf_cfg, layer_idx=0).eval()
    state = {k: v for k, v in mine.state_dict().items() if not k.startswith("o_proj")}
    hf.load_state_dict(
        {**state, "o_proj.weight": torch.randn(2 * c.hidden_size, c.num_attention_heads * 12)}, strict=True
    )
    mine.o_proj.weight.data.copy_(hf.o_proj.weight.data[: c.hidden_size])  # the rows that map to H outputs
    x = torch.randn(2, 7, 2 * c.hidden_size)
    pos = torch.arange(7)
    with torch.no_grad():
        cos_sin = DeepseekV3RotaryEmbedding(hf_cfg)(x, pos[None].expand(2, -1))
        want = hf(x, position_embeddings=cos_sin, attention_mask=None)[0][..., : c.hidden_size]
        got = mine(x, pos, [])
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()


def test_architecture_follows_the_target_and_can_be_forced(tmp_path):
    dsv3 = json.loads((make_dsv3(tmp_path / "m") / "config.json").read_text())
    llama = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64}
    assert choose_arch(dsv3) == "mla" and choose_arch(llama) == "llama"
    assert choose_arch(dsv3, "llama") == "llama"  # overridable
    kimi = {"model_type": "kimi_k25", "text_config": {k: dsv3[k] for k in dsv3 if k != "architectures"}}
    assert choose_arch(kimi) == "mla"  # Kimi-K2.5's multimodal config nests the text model's
    with pytest.raises(DraftsetError, match="no \\['kv_lora_rank'"):
        choose_arch(llama, "mla")  # an MLA draft needs the target's MLA dims: said, not guessed
    with pytest.raises(DraftsetError, match="cannot build an MLA draft"):
        choose_arch({"model_type": "deepseek_v3", "hidden_size": 64})  # a DeepSeek type without its MLA fields


@pytest.fixture(scope="module")
def mla_run(tmp_path_factory):
    """A tiny DeepSeek-V3 target, its capture, and an MLA draft trained offline on it and exported."""
    root = tmp_path_factory.mktemp("mla")
    model, build, _, _ = train_mla_toy(root)
    return root, model, build


def test_offline_mla_draft_exports_the_engine_layout(mla_run):
    root, model, _ = mla_run
    draft, m = root / "draft", CaptureManifest.load(root / "capture")
    cfg = json.loads((draft / "config.json").read_text())
    target = json.loads((model / "config.json").read_text())
    assert cfg["architectures"] == [MLA_ARCHITECTURE] and cfg["model_type"] == "deepseek_v3"
    for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        assert cfg[k] == target[k]  # the target's MLA shape: the draft's cache has the target's layout
    assert cfg["num_hidden_layers"] == 1 and "head_dim" not in cfg
    assert cfg["rope_theta"] == ENGINE_ROPE_THETA and cfg["rope_scaling"] is None
    assert cfg["draftset"]["rope"]["rope_theta"] == ENGINE_ROPE_THETA
    assert (
        cfg["eagle_aux_hidden_state_layer_ids"] == m.taps.aux
        and len(cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"]) == 3
    )
    with safe_open(str(draft / "model.safetensors"), framework="pt") as f:
        keys = set(f.keys())
        kv_a = f.get_tensor("midlayer.self_attn.kv_a_proj_with_mqa.weight")
    assert {f"midlayer.self_attn.{k}.weight" for k in MLA_KEYS} <= keys
    assert not any(p in k for k in keys for p in ("k_proj", "v_proj", "q_proj."))  # no GQA layer
    assert tuple(kv_a.shape) == (target["kv_lora_rank"] + target["qk_rope_head_dim"], 2 * target["hidden_size"])
    from transformers import AutoConfig  # the engines read the draft's config.json through it: it must validate

    seen = AutoConfig.from_pretrained(draft)
    assert type(seen).__name__ == "DeepseekV3Config" and seen.num_hidden_layers == 1 and seen.first_k_dense_replace
    assert (seen.q_lora_rank, seen.kv_lora_rank) == (target["q_lora_rank"], target["kv_lora_rank"])
    assert seen.rope_parameters == {"rope_type": "default", "rope_theta": ENGINE_ROPE_THETA}
    log = [json.loads(line) for line in (draft / "train" / "train_log.jsonl").read_text().splitlines()]
    assert log[-1]["loss"] < log[0]["loss"]  # it learned


def test_export_reloads_into_identical_logits(mla_run):
    """The exported draft (bf16 weights, config.json) reloads into the trained draft's exact logits: same
    class, same shape, same rope, every weight under its name."""
    root, _, _ = mla_run
    resolved = json.loads((root / "draft" / "train" / "checkpoint" / "resolved.json").read_text())
    trained = Eagle3Draft(DraftMLAConfig(**resolved["draft"]))
    state = load_file(str(root / "draft" / "train" / "checkpoint" / "draft.safetensors"))
    trained.load_state_dict({k: v.bfloat16().float() if v.is_floating_point() else v for k, v in state.items()})
    reloaded, manifest, cfg = load_exported(root / "draft")
    assert isinstance(reloaded.config, DraftMLAConfig) and reloaded.config == trained.config
    assert exported_draft_config(cfg, 3) == trained.config
    reader = CaptureReader(root / "capture")
    batch = collate([reader.load(i) for i in reader.ids()[:3]])
    pos = torch.arange(batch.input_ids.shape[1])
    embeds = torch.randn(*batch.input_ids.shape, manifest.hidden_size)
    with torch.no_grad():
        chains = []
        for d in (trained.eval(), reloaded):
            cache: list = []
            hidden, out = d.fuse(batch.aux.float()), []
            for k in range(3):
                logits, hidden = d.step(embeds, hidden, pos + k, cache)
                out.append(logits)
            chains.append(out)
    for a, b in zip(*chains, strict=True):
        assert torch.equal(a, b)


def test_online_training_picks_the_mla_draft_too(mla_run, tmp_path):
    from pipeline.train.loop import run_train

    root, model, build = mla_run
    run_train(
        plain_config(
            capture_dir=None,
            online=True,
            build_dir=build,
            model_dir=model,
            out_dir=tmp_path / "online",
            max_steps=3,
            batch_tokens=128,
            ttt_steps=2,
            device="cpu",
        )
    )
    cfg = json.loads((tmp_path / "online" / "config.json").read_text())
    assert cfg["architectures"] == [MLA_ARCHITECTURE] and not list((tmp_path / "online").rglob("shard-*"))
    offline = json.loads((root / "draft" / "config.json").read_text())
    assert {k: v for k, v in cfg.items() if k != "draftset"} == {k: v for k, v in offline.items() if k != "draftset"}


def test_llama_draft_can_be_forced_on_an_mla_target(mla_run, tmp_path):
    from pipeline.train.loop import run_train

    root, _, _ = mla_run
    common = {"max_steps": 1, "batch_tokens": 128, "ttt_steps": 1, "device": "cpu", "draft_arch": "llama"}
    run_train(plain_config(capture_dir=root / "capture", out_dir=tmp_path / "llama", **common))
    cfg = json.loads((tmp_path / "llama" / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLMEagle3"] and "kv_lora_rank" not in cfg


def test_resume_refuses_another_draft_architecture(mla_run, tmp_path):
    """A state saved for the MLA draft cannot be resumed as a Llama-style one (one line, not a state-dict trace);
    a state saved before draft_arch existed resumes under auto, the architecture it was trained with."""
    import shutil

    from pipeline.train.loop import TrainStage
    from pipeline.train.resume import STATE

    root, _, _ = mla_run
    out = tmp_path / "resume"
    shutil.copytree(root / "draft" / "train", out / "train")
    common = {"capture_dir": root / "capture", "out_dir": out, "batch_tokens": 128, "ttt_steps": 2, "device": "cpu"}
    with pytest.raises(DraftsetError, match="cannot resume: draft_arch differ"):
        TrainStage(plain_config(**common, resume=True, draft_arch="llama"))
    state_path = out / "train" / "checkpoint" / STATE
    state = torch.load(state_path, weights_only=False)
    del state["order"]["draft_arch"]
    torch.save(state, state_path)
    assert TrainStage(plain_config(**common, resume=True)).pos.epoch == 3  # every epoch done: resumes at the end


def test_eagle31_options_train_and_export_on_the_mla_draft(mla_run, tmp_path):
    """fc_norm / norm_output are the shared draft's: the MLA draft trains and exports them as vLLM and SGLang's
    kimi_k25_eagle3.py read them (top-level flags, fc_norm.{k}.weight), and reloads identically."""
    from pipeline.train.loop import run_train

    root, _, _ = mla_run
    common = {"max_steps": 2, "batch_tokens": 128, "ttt_steps": 2, "device": "cpu", "lr": 1e-2}
    run_train(
        plain_config(capture_dir=root / "capture", out_dir=tmp_path / "e31", fc_norm=True, norm_output=True, **common)
    )
    cfg = json.loads((tmp_path / "e31" / "config.json").read_text())
    assert cfg["architectures"] == [MLA_ARCHITECTURE] and cfg["fc_norm"] is True and cfg["norm_output"] is True
    with safe_open(str(tmp_path / "e31" / "model.safetensors"), framework="pt") as f:
        assert {f"fc_norm.{k}.weight" for k in range(3)} <= set(f.keys())
    draft, _, _ = load_exported(tmp_path / "e31")
    assert draft.config.fc_norm and draft.config.norm_output and isinstance(draft.config, DraftMLAConfig)
