"""What SGLang 0.5.23's startup makes of the speculative flags, before any weight is loaded.

Mirrors, in order:
  python/sglang/srt/arg_groups/speculative_hook.py  handle_speculative_decoding: the algorithm is
      upper-cased; `_resolve_speculative_algorithm_alias` turns NEXTN (and EAGLE) into EAGLE.
  python/sglang/srt/speculative/spec_info.py  SpeculativeAlgorithm.from_string: unknown names raise.
  speculative_hook.py  _handle_eagle_family (EAGLE, EAGLE3, STANDALONE):
      - steps unset (and not --speculative-adaptive): `assert topk is None and num_draft_tokens is None`,
        then `_auto_choose_speculative_params(model_arch)` with model_arch = target architectures[0];
      - steps set, topk unset: `speculative_eagle_topk > 1` compares None with an int -> TypeError;
      - topk == 1 and num_draft_tokens != steps + 1: a warning, and num_draft_tokens := steps + 1.
Each outcome carries the exception or log line the server would produce.
"""

from __future__ import annotations

from dataclasses import dataclass

HOOK = "python/sglang/srt/arg_groups/speculative_hook.py"
SPEC_INFO = "python/sglang/srt/speculative/spec_info.py"
BUILTIN_ALGORITHMS = {"DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NONE"}
EAGLE_FAMILY = {"EAGLE", "EAGLE3", "STANDALONE"}
_GEMMA4_DRAFTS = {"Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM"}
# _auto_choose_speculative_params: every architecture not listed gets (3, 1, 4).
_AUTO_5_4_8 = {"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"}


def auto_choice(algorithm: str, target_arch: str | None) -> tuple[int, int, int]:
    """(steps, topk, num_draft_tokens) SGLang picks when none of the three is given."""
    if algorithm == "STANDALONE":
        return 3, 1, 4
    return (5, 4, 8) if target_arch in _AUTO_5_4_8 else (3, 1, 4)


@dataclass
class Startup:
    written: str | None  # --speculative-algorithm as typed
    algorithm: str | None  # after upper-casing and aliases (None: no speculation)
    steps: int | None = None
    topk: int | None = None
    draft_tokens: int | None = None
    auto: tuple[int, int, int] | None = None  # set when SGLang chose the three itself
    forced_draft_tokens: tuple[int, int] | None = None  # (given, what SGLang uses) when topk 1 forced it
    crash: str | None = None  # the exception startup raises
    crash_source: str = HOOK
    adaptive: bool = False


def resolve(values: dict, target_arch: str | None, draft_arch: str | None = None) -> Startup:
    written = values.get("speculative_algorithm")
    out = Startup(written, None)
    if written is None:
        return out
    algo = written.upper()
    if algo == "EAGLE3" and draft_arch in _GEMMA4_DRAFTS:
        out.crash = "ValueError: Gemma4AssistantForCausalLM draft requires --speculative-algorithm NEXTN or EAGLE"
        return out
    if algo in ("NEXTN", "EAGLE"):
        algo = "FROZEN_KV_MTP" if draft_arch in _GEMMA4_DRAFTS else "EAGLE"
    if algo not in BUILTIN_ALGORITHMS:
        out.crash, out.crash_source = f"ValueError: Unknown speculative algorithm name: {written}", SPEC_INFO
        return out
    out.algorithm = None if algo == "NONE" else algo
    if out.algorithm not in EAGLE_FAMILY:
        return out
    steps, topk, ndt = (
        values.get(k) for k in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
    )
    out.adaptive = bool(values.get("speculative_adaptive"))
    if out.adaptive:  # _init_adaptive_speculative_params: topk 1, steps from the adaptive config, tokens steps+1
        out.steps, out.topk = steps, 1 if topk is None else topk
        out.draft_tokens = steps + 1 if steps is not None else None
        return out
    if steps is None:
        if topk is not None or ndt is not None:
            out.crash = (
                "AssertionError in _handle_eagle_family: --speculative-eagle-topk/--speculative-num-draft-"
                "tokens given without --speculative-num-steps"
            )
            return out
        out.auto = auto_choice(out.algorithm, target_arch)
        steps, topk, ndt = out.auto
    if steps is not None and topk is None:
        out.crash = (
            "TypeError: '>' not supported between instances of 'NoneType' and 'int' "
            "(_handle_eagle_family compares speculative_eagle_topk > 1)"
        )
        return out
    if topk == 1 and steps is not None and ndt != steps + 1:
        if ndt is not None:  # unset is simply filled in (same log line); a given value is overridden
            out.forced_draft_tokens = (ndt, steps + 1)
        ndt = steps + 1
    out.steps, out.topk, out.draft_tokens = steps, topk, ndt
    return out
