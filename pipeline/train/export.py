"""Export a checkpoint to the layout SGLang (`LlamaForCausalLMEagle3`) and vLLM/speculators load (an MLA draft:
`Eagle3DeepseekV2ForCausalLM`, its fields from pipeline/train/draft_arch.py).

config.json carries both engines' layer-id keys derived from the capture manifest (never retyped),
the draft and target vocab sizes and the serving facts (chat template hash, system prompt, thinking,
training length) that `draftset check serve` compares against a launch command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import DraftsetError
from catalog.io import atomic_path, write_json_atomic
from pipeline.capture.layers import sglang_tap_rule, target_config, written_ids
from pipeline.capture.manifest import MANIFEST, CaptureManifest
from pipeline.train.draft_arch import exported_draft_config, is_mla_dump, mla_config_json

if TYPE_CHECKING:
    from pipeline.train.draft_model import Eagle3Draft

WEIGHTS = "model.safetensors"
SGLANG_PREFIXES = ("midlayer.", "fc.", "fc_norm.", "norm.", "lm_head.")
SGLANG_BUFFERS = ("d2t", "t2d")


def draft_config_json(
    draft: dict, manifest: CaptureManifest, train: dict, target: dict | None = None, longest_row: int | None = None
) -> dict:
    """`target` is the target's config.json: SGLang's id shift depends on its architecture (layers.py).
    `longest_row`: the longest training row, the last position the draft learned (check serve's context limit)."""
    plan = manifest.plan
    target = target or target_config(manifest.model_dir, manifest.model_type, manifest.n_layers)
    rule = sglang_tap_rule({**target, "num_hidden_layers": manifest.n_layers})
    # An architecture without SGLang EAGLE3 capture still gets the common (+1) form; check serve reports it.
    sglang_ids = written_ids(rule if rule.name != "none" else rule.model_copy(update={"name": "plus_one"}), plan.aux)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": draft["hidden_size"],
        "target_hidden_size": draft["target_hidden_size"],
        "intermediate_size": draft["intermediate_size"],
        "num_attention_heads": draft["num_attention_heads"],
        "num_key_value_heads": draft.get("num_key_value_heads"),  # GQA only (the MLA draft drops both)
        "head_dim": draft.get("head_dim"),
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": draft["rms_norm_eps"],
        "rope_theta": draft["rope_theta"],
        "max_position_embeddings": draft["max_position_embeddings"],
        "rope_scaling": None,  # the draft trains plain RoPE (draft_model._rope); never the target's YaRN
        "vocab_size": draft["vocab_size"],
        "draft_vocab_size": draft["draft_vocab_size"],
        "tie_word_embeddings": False,
        "bias": False,
        "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": sglang_ids, "use_aux_hidden_state": True},
        # EAGLE-3.1 options as top-level booleans (the fields eval/checks/draft_weights.py reads; written only
        # when on, so a plain EAGLE-3 config stays byte-identical to what engines without them load)
        **({"fc_norm": True} if draft.get("fc_norm") else {}),
        **({"norm_output": True} if draft.get("norm_output") else {}),
        "eagle_aux_hidden_state_layer_ids": plan.vllm_ids(),
        "draftset": {
            "hf_hidden_state_ids": plan.aux,
            "n_target_layers": plan.n_layers,
            "ttt_steps": train["ttt_steps"],
            "heldout_every": train["heldout_every"],
            "target_model": manifest.model_id,
            "target_revision": manifest.model_revision,
            "target_architecture": rule.architecture,
            "sglang_tap_rule": rule.name,
            "chat_template_sha256": manifest.chat_template_sha256,
            "system_prompt": manifest.system_prompt,
            "thinking": manifest.thinking,
            "max_length": draft["max_position_embeddings"],
            "longest_training_row": longest_row or None,
            "rope": {"rope_theta": draft["rope_theta"], "rope_scaling": None},  # what training used
        },
    }
    return mla_config_json(config, draft) if is_mla_dump(draft) else config  # the MLA draft: draft_arch.py


def export_draft(checkpoint: Path, out_dir: Path) -> Path:
    """Write config.json + model.safetensors (midlayer.*, fc.*, norm.*, lm_head.*, d2t, t2d) + manifest."""
    import torch
    from safetensors.torch import load_file, save_file

    checkpoint, out_dir = Path(checkpoint), Path(out_dir)
    resolved_path = checkpoint / "resolved.json"
    if not resolved_path.exists():
        raise DraftsetError(
            f"{checkpoint} is not a draftset checkpoint (no resolved.json)",
            hint="pass the `train/checkpoint` dir written by `draftset train`",
        )
    resolved = json.loads(resolved_path.read_text())
    manifest = CaptureManifest.model_validate(resolved["capture_manifest"])
    longest = (resolved.get("metrics") or {}).get("longest_training_row")
    config = draft_config_json(resolved["draft"], manifest, resolved["train"], longest_row=longest)
    state = load_file(str(checkpoint / "draft.safetensors"))
    foreign = [k for k in state if not (k.startswith(SGLANG_PREFIXES) or k in SGLANG_BUFFERS)]
    if foreign:
        raise DraftsetError(
            f"checkpoint has keys SGLang would silently ignore: {foreign[:4]}",
            hint="export only checkpoints written by `draftset train`",
        )
    weights = {k: (v.to(torch.bfloat16) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / WEIGHTS) as tmp:
        save_file(weights, str(tmp), metadata={"format": "pt"})
    write_json_atomic(out_dir / "config.json", config)
    manifest.save(out_dir)
    write_json_atomic(out_dir / "draftset_metrics.json", resolved.get("metrics", {}))
    return out_dir


def load_exported(draft_dir: Path) -> tuple[Eagle3Draft, CaptureManifest, dict[str, Any]]:
    """(Eagle3Draft in fp32, capture manifest, config.json) from an exported draft dir."""
    from safetensors.torch import load_file

    from pipeline.train.draft_model import Eagle3Draft

    draft_dir = Path(draft_dir)
    for need in ("config.json", WEIGHTS, MANIFEST):
        if not (draft_dir / need).exists():
            raise DraftsetError(f"{draft_dir} has no {need}", hint="export it with `draftset export CHECKPOINT`")
    cfg = json.loads((draft_dir / "config.json").read_text())
    manifest = CaptureManifest.load(draft_dir)
    draft = Eagle3Draft(exported_draft_config(cfg, len(manifest.taps.aux)))
    state = {k: v.float() if v.is_floating_point() else v for k, v in load_file(str(draft_dir / WEIGHTS)).items()}
    draft.load_state_dict(state)
    return draft.eval(), manifest, cfg
