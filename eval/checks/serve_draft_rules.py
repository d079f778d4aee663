"""Rules about the draft itself under a given engine: the layers it will be fed, its weights and
vocabulary map, and the serving facts training fixed (target, template, system prompt, thinking)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from catalog.errors import DraftsetError
from eval.checks.draft_weights import SGLANG_LOADER, VLLM_LOADER, check_weights
from eval.checks.serve_context import Draft, Finding
from pipeline.capture.layers import (
    TapRule,
    default_aux_layers,
    engine_captures,
    sglang_tap_rule,
    vllm_tap_rule,
    written_ids,
)
from pipeline.capture.manifest import model_revision
from pipeline.targets.template import file_template_sha256, model_template_sha256

NESTED = "eagle_config.eagle_aux_hidden_state_layer_ids"
TOP = "eagle_aux_hidden_state_layer_ids"


def _fix_ids(draft: Draft, rule: TapRule, key: str) -> str:
    taps = draft.trained_taps or []
    try:
        return f"set {key} = {written_ids(rule, taps)} (draftset export writes it for this target)"
    except DraftsetError:
        return (
            f"recapture and retrain with taps this engine can capture, e.g. --layers "
            f"{','.join(map(str, default_aux_layers(rule.n_layers)))}"
        )


def sglang_layers(draft: Draft, target: dict, origin: str) -> Iterator[Finding]:
    taps = draft.trained_taps
    rule = sglang_tap_rule(target)
    if taps is None:
        return
    applied = f"{rule.describe()}; target config from {origin}"
    if rule.name == "none":
        yield Finding(
            "sglang.layers.architecture",
            "error",
            "--model-path",
            f"target architecture {rule.architecture} has no EAGLE3 aux-hidden-state capture in SGLang",
            "startup raises ValueError (model does not implement set_eagle3_layers_to_capture)",
            "serve this target with vLLM, or a supported architecture",
            rule.source,
        )
        return
    eagle = draft.cfg.get("eagle_config") or {}
    if eagle.get("use_aux_hidden_state", True) is False:
        yield Finding(
            "sglang.layers.no_aux",
            "error",
            "draft config.json eagle_config.use_aux_hidden_state",
            "use_aux_hidden_state is false",
            "SGLang then feeds the draft no aux hidden states",
            "set eagle_config.use_aux_hidden_state = true",
            "python/sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py, SGLang 0.5.23",
        )
    written = eagle.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle, dict) else None
    captured, lost = engine_captures(rule, written)
    if captured != taps:
        shown = written if written is not None else "absent (SGLang then uses its defaults)"
        if captured == [t + 1 for t in taps] or captured == [t - 1 for t in taps]:
            late = captured[0] > taps[0]
            applied = (
                f"every tap is one layer {'late' if late else 'early'}"
                + (" (these are the HF/vLLM ids, and this rule adds +1)" if late and written == taps else "")
                + f"; {applied}"
            )
        yield Finding(
            "sglang.layers.mismatch",
            "error",
            f"draft config.json {NESTED}",
            f"{NESTED} = {shown}: SGLang captures HF {captured}"
            + (f" (ids {lost} are never captured)" if lost else "")
            + f", the draft was trained on HF {taps}"
            f" [{applied}]",
            "a wiring mismatch keeps the server running while acceptance falls toward chance",
            _fix_ids(draft, rule, NESTED),
            rule.source,
        )


def vllm_layers(draft: Draft, target: dict, origin: str) -> Iterator[Finding]:
    taps = draft.trained_taps
    rule = vllm_tap_rule(target)
    if taps is None:
        return
    top = draft.cfg.get(TOP) or (draft.cfg.get("eagle_config") or {}).get(TOP) or None
    captured, _ = engine_captures(rule, list(top) if top else None)
    if captured != taps:
        yield Finding(
            "vllm.layers.mismatch",
            "error",
            f"draft config.json {TOP}",
            f"{TOP} = {top}: vLLM captures HF {captured}, the draft was trained on HF {taps}",
            f"vLLM reads the top-level ids as given [{rule.describe()}; target config from {origin}]",
            f"set {TOP} = {taps}",
            rule.source,
        )


def weights(draft: Draft, target: dict, engine: str) -> Iterator[Finding]:
    vocab = (
        target.get("vocab_size")
        or (target.get("text_config") or {}).get("vocab_size")
        or (draft.manifest.vocab_size if draft.manifest else None)
    )
    r = check_weights(draft.cfg, draft.tensors, draft.d2t, draft.t2d, vocab)
    src = f"{SGLANG_LOADER[0]}, SGLang {SGLANG_LOADER[1]}"
    vsrc = f"{VLLM_LOADER[0]}, vLLM {VLLM_LOADER[1]}"
    if engine == "sglang" and (r.sglang_skipped or r.sglang_missing):
        yield Finding(
            "weights.sglang.not_loaded",
            "error",
            "draft model.safetensors keys",
            f"keys SGLang skips: {_few(r.sglang_skipped)}; parameters left unfilled: {_few(r.sglang_missing)}",
            "SGLang's llama_eagle3 loader skips unknown names silently, so those weights stay random",
            "write midlayer.* (or layers.0.*), fc.*, norm.*, lm_head.* keys: draftset export CHECKPOINT",
            src,
        )
    if engine == "vllm" and r.vllm_refused:
        yield Finding(
            "weights.vllm.refused",
            "error",
            "draft model.safetensors keys",
            f"keys vLLM cannot place: {_few(r.vllm_refused)}",
            "AutoWeightsLoader raises at load",
            "re-export the draft: draftset export CHECKPOINT",
            vsrc,
        )
    if r.vocab:
        yield Finding(
            "weights.vocab_map",
            "error",
            "draft model.safetensors d2t/t2d",
            "; ".join(r.vocab),
            "a wrong map scores draft tokens as other target tokens: acceptance near zero, no error",
            "re-export from the checkpoint with the build's vocab.safetensors (d2t int64 [K], t2d bool [V])",
            src if engine == "sglang" else vsrc,
        )
    nested = (draft.cfg.get("eagle_config") or {}).get(TOP)
    n_aux = len(nested) if nested else 3
    fc = draft.tensors.get("fc.weight") or draft.tensors.get("model.fc.weight")
    hidden = draft.cfg.get("target_hidden_size") or draft.cfg.get("hidden_size")
    if engine == "sglang" and fc and hidden and fc[1][1] != hidden * n_aux:
        yield Finding(
            "weights.sglang.fc_shape",
            "error",
            "draft fc.weight",
            f"fc.weight is {fc[1]}, SGLang builds "
            f"fc for {n_aux} aux states of {hidden} ({'len of ' + NESTED if nested else 'default 3'})",
            "the weight loader's shape check fails at load",
            f"make {NESTED} list every trained tap",
            f"{SGLANG_LOADER[0]} (LlamaModel.__init__ num_aux_hidden_states), SGLang {SGLANG_LOADER[1]}",
        )
    yield from mlp_shape(draft, src if engine == "sglang" else vsrc)


PACKED_DTYPES = ("U8", "I8", "I16", "I32", "U32")  # safetensors dtypes quantized checkpoints pack weights into


def mlp_shape(draft: Draft, src: str) -> Iterator[Finding]:
    """The engines build the draft layer's MLP from its own config.json (intermediate_size x hidden_size), then load
    the weights into it: a draft trained wider or narrower than its config says fails there (train's
    draft_intermediate_size writes the width it trained)."""
    width, hidden = draft.cfg.get("intermediate_size"), draft.cfg.get("hidden_size")
    if not (width and hidden):
        return
    want = {"gate_proj": [width, hidden], "up_proj": [width, hidden], "down_proj": [hidden, width]}
    wrong = [
        f"{name} is {shape}, config.json says {want[part]}"
        for name, (dtype, shape) in draft.tensors.items()
        for part in want
        # integer weights may be packed (several 4-bit values a byte): their shape is not the layer's
        if name.endswith(f"mlp.{part}.weight") and dtype not in PACKED_DTYPES and shape != want[part]
    ]
    if wrong:
        yield Finding(
            "weights.mlp_shape",
            "error",
            "draft mlp weights against config.json intermediate_size",
            "; ".join(wrong[:3]),
            "the engine builds the MLP from config.json and its weight loader's shape check fails at load",
            "re-export the draft so config.json names the width it was trained with: draftset export CHECKPOINT",
            src,
        )


def _few(items: list[str]) -> str:
    return (", ".join(items[:4]) + ("…" if len(items) > 4 else "")) if items else "none"


def serving_facts(
    draft: Draft, model_arg: str | None, template: str | None, system_prompt: str | None, thinking: bool | None
) -> Iterator[Finding]:
    m = draft.manifest
    if m is None:
        return
    model_path = Path(model_arg or "")
    if (
        model_arg
        and model_path.is_dir()
        and (model_path / "config.json").exists()
        and model_revision(model_path) != m.model_revision
    ):
        yield Finding(
            "serve.target_model",
            "error",
            "--model-path",
            f"target {model_path} is not the captured target ({m.model_id} {m.model_revision})",
            "the draft predicts the hidden states of the model it was trained on",
            f"--model-path {m.model_dir}",
            "capture manifest (model_revision)",
            {"model_path": m.model_dir},
        )
    if (
        template is not None
        and m.chat_template_sha256
        and file_template_sha256(Path(template)) != m.chat_template_sha256
    ):
        yield Finding(
            "serve.chat_template",
            "error",
            "--chat-template",
            f"serving template {template!r} differs from the training template (sha256 {m.chat_template_sha256[:12]}…)",
            "prompts tokenised differently from training shift every hidden state the draft sees",
            "drop --chat-template to use the model's own template",
            "capture manifest (chat_template_sha256)",
            {"chat_template": None},
        )
    elif template is None and m.chat_template_sha256 and model_path.is_dir():
        served = model_template_sha256(model_path)  # what the engine renders with when no --chat-template
        if served is not None and served != m.chat_template_sha256:
            yield Finding(
                "serve.chat_template",
                "error",
                "--model-path",
                f"the template of {model_path} (sha256 {served[:12]}…) differs from the training template "
                f"(sha256 {m.chat_template_sha256[:12]}…)",
                "prompts tokenised differently from training shift every hidden state the draft sees",
                "serve with the template the draft was built with (--chat-template FILE)",
                "capture manifest (chat_template_sha256)",
            )
    if system_prompt is not None and system_prompt != (m.system_prompt or ""):
        yield Finding(
            "serve.system_prompt",
            "error",
            "client system prompt",
            f"serving system prompt {system_prompt[:40]!r} ≠ training {(m.system_prompt or '')[:40]!r}",
            "a system-prompt mismatch cut accept length 5.88 → 2.42 in SGLang's own tests (sglang PR #4716)",
            "send the training system prompt, or rebuild with the serving one",
            "capture manifest",
        )
    if thinking is not None and m.thinking is not None and thinking != m.thinking:
        yield Finding(
            "serve.thinking",
            "error",
            "client thinking mode",
            f"serving thinking={thinking}, training thinking={m.thinking}",
            "thinking and non-thinking answers are different distributions",
            f"serve with enable_thinking={m.thinking}, or rebuild and retrain with thinking={thinking}",
            "capture manifest",
        )
