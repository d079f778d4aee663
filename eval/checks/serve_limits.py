"""The draft's serving limits: the context it was trained on and the positions it encodes (RoPE).

A draft learns positions up to its training length (build max_length); past that its acceptance falls below the
no-speculation baseline (sglang issue #6783: an EAGLE-3 head with max_position_embeddings 2048 served on
>2k prompts was slower than no speculation; SafeAILab/EAGLE #311: `--max-length` caps the draft's
window). The serving context is `--context-length` (SGLang) / `--max-model-len` (vLLM), else what the
engine derives from the target's config.json, as SGLang's get_context_length does
(python/sglang/srt/utils/hf_transformers_utils.py, SGLang 0.5.x): the first of the keys below, times
rope_scaling.factor unless the scaling names original_max_position_embeddings or is llama3.
SGLang also refuses a draft whose own derived context is below the target's at startup unless
SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (python/sglang/srt/configs/model_config.py
_derive_context_length; default off since sglang PR #9388).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from eval.checks.serve_context import Draft, Finding

CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
DERIVE_SRC = "python/sglang/srt/utils/hf_transformers_utils.py get_context_length, SGLang 0.5.x"
STARTUP_SRC = "python/sglang/srt/configs/model_config.py _derive_context_length, SGLang 0.5.x (PR #9388)"
ALLOW = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
_HUMAN = re.compile(r"^(\d+)([kKmM]?)$")


def derived_context(config: dict) -> int | None:
    """The context an engine serves when no flag sets it. None when the config names none: SGLang would then
    assume 2048, but such a config is usually the partial one check serve rebuilt from the draft's own record
    (serve_context.resolve_target), so no warning is raised on a guess."""
    text = config.get("text_config") or config
    scaling = text.get("rope_scaling") or {}
    factor = scaling.get("factor", 1) if isinstance(scaling, dict) else 1
    if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
        factor = 1
    for key in CONTEXT_KEYS:
        value = text.get(key) if key in text else config.get(key)
        if isinstance(value, int) and value > 0:
            return int(factor * value)
    return None


def trained_context(draft: Draft) -> tuple[int | None, str]:
    """(the context the draft was trained for, what the figure is). The build's max_length is the trained
    context as the field names it (SpecForge/EAGLE `--max-length`, the exported max_position_embeddings); the
    longest training row (recorded since issue 30) is the fallback and is reported beside it."""
    meta = draft.meta
    length = meta.get("max_length") or (draft.manifest.max_length if draft.manifest else None)
    longest = meta.get("longest_training_row")
    if length:
        return int(length), "build max_length" + (f"; longest training row {longest}" if longest else "")
    return (int(longest), "its longest training row") if longest else (None, "")


def vllm_max_model_len(tokens: list[str]) -> tuple[int | None, str | None]:
    """`--max-model-len N` / `--max_model_len=N` as vLLM reads it (plain ints and k/m suffixes)."""
    for i, tok in enumerate(tokens):
        name, eq, value = tok.partition("=")
        if name.replace("_", "-") != "--max-model-len":
            continue
        value = value if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
        m = _HUMAN.match(value)
        if m:
            scale = {"": 1, "k": 1000, "m": 1_000_000}[m.group(2).lower()]
            return int(m.group(1)) * scale, name
    return None, None


def context_limits(
    draft: Draft, served: int | None, flag: str | None, target: dict, engine: str, env: list[str] | None = None
) -> Iterator[Finding]:
    """`served`/`flag`: the context the command sets; None falls back to the target's derived context.
    `env`: the command's leading words (VAR=value among them: SGLang reads its startup override from there)."""
    trained, what = trained_context(draft)
    if not trained:
        return
    origin = f"{flag} {served}" if served else None
    if served is None:
        served = derived_context(target)
        origin = f"the target's config.json context {served} (no {'--context-length' if engine == 'sglang' else '--max-model-len'})"
    if not served or served <= trained:
        return
    startup = ""
    dpe = draft.cfg.get("max_position_embeddings")
    if engine == "sglang" and isinstance(dpe, int) and served > dpe:
        allowed = any(e.partition("=")[0] == ALLOW and e.partition("=")[2].lower() in ("1", "true") for e in env or [])
        startup = (
            f"; {ALLOW}=1 lets SGLang start the draft past its max_position_embeddings {dpe}"
            if allowed
            else f"; SGLang also stops at startup (draft max_position_embeddings {dpe} < {served}: ValueError) "
            f"unless {ALLOW}=1 is in its environment"
        )
    flag_name = "--context-length" if engine == "sglang" else "--max-model-len"
    yield Finding(
        "serve.context_length",
        "warning",
        flag or flag_name,
        f"serving context {served} ({origin}) > the {trained} positions the draft was trained on ({what})",
        "past its trained positions a draft's acceptance collapses, below no speculation at all "
        f"(sglang issue #6783){startup}",
        f"serve with {flag_name} {trained}, or retrain on longer rows: `draftset build ... --max-length {served}`, "
        "then capture and train again",
        f"{DERIVE_SRC}; {STARTUP_SRC}; draft config.json draftset.max_length / longest_training_row",
        {"context_length": str(trained)} if engine == "sglang" and flag else {},
    )


def rope_settings(draft: Draft) -> Iterator[Finding]:
    """The engine builds the draft's RoPE from its config.json; it must be the RoPE training used."""
    trained = draft.meta.get("rope")
    if not isinstance(trained, dict):
        return  # exported before draftset recorded it
    served = {"rope_theta": draft.cfg.get("rope_theta"), "rope_scaling": draft.cfg.get("rope_scaling")}
    if served != trained:
        yield Finding(
            "serve.draft_rope",
            "error",
            "draft config.json rope_theta / rope_scaling",
            f"the draft's config.json sets {served}, training used {trained}",
            "the engine rotates the draft's queries and keys by the config's RoPE: other frequencies than "
            "training's scramble every attention score, with no error",
            f"restore rope_theta = {trained.get('rope_theta')} and rope_scaling = {trained.get('rope_scaling')} "
            "(re-export: draftset export CHECKPOINT)",
            "python/sglang/srt/models/llama_eagle3.py (LlamaAttention rope from config), SGLang 0.5.x",
        )
