"""The serving rules `check serve` enforces, one small function each (DESIGN.md "SGLang serving rules")."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import DraftsetError
from eval.checks.sglang_args import LaunchCommand
from pipeline.capture.layers import default_aux_layers, from_sglang, sglang_uncapturable, to_sglang
from pipeline.capture.manifest import MANIFEST, CaptureManifest, model_revision, template_sha256
from pipeline.train.export import SGLANG_BUFFERS, SGLANG_PREFIXES, WEIGHTS

ALGO, DRAFT = "--speculative-algorithm", "--speculative-draft-model-path"
STEPS, TOPK, NDT = "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"
SGLANG_KEYS = (*SGLANG_PREFIXES, "embed_tokens.")   # SGLang also loads a draft's own embedding
REQUIRED = ("fc.weight", "midlayer.self_attn.q_proj.weight", "norm.weight", "lm_head.weight", "d2t")


@dataclass
class Finding:
    flag: str
    problem: str
    why: str
    fix: str
    changes: dict[str, str | None] = field(default_factory=dict)   # flag edits for the corrected command


@dataclass
class Context:
    draft_dir: Path
    cmd: LaunchCommand
    cfg: dict
    manifest: CaptureManifest
    shapes: dict[str, list[int]]
    system_prompt: str | None
    thinking: bool | None

    @classmethod
    def load(cls, draft_dir: Path, cmd: LaunchCommand, system_prompt, thinking) -> Context:
        from safetensors import safe_open

        for need in ("config.json", WEIGHTS, MANIFEST):
            if not (draft_dir / need).exists():
                raise DraftsetError(f"{draft_dir} has no {need}", hint="export the draft with `draftset export`")
        with safe_open(str(draft_dir / WEIGHTS), framework="numpy") as f:  # shapes only: no torch
            shapes = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
        return cls(draft_dir, cmd, json.loads((draft_dir / "config.json").read_text()),
                   CaptureManifest.load(draft_dir), shapes, system_prompt, thinking)

    @property
    def ttt_steps(self) -> int:
        return int(self.cfg.get("draftset", {}).get("ttt_steps", 7))


def algorithm(c: Context) -> Iterator[Finding]:
    algo = c.cmd.get(ALGO)
    if algo != "EAGLE3":
        yield Finding(ALGO, f"{ALGO} is {algo!r}, the draft is an EAGLE-3 draft with {len(c.manifest.taps.aux)} aux taps",
                      "only EAGLE3 makes SGLang capture the aux hidden states; under EAGLE the fc layer is silently "
                      "skipped and accept length is 1.00 with no error", f"{ALGO} EAGLE3", {ALGO: "EAGLE3"})


def draft_path(c: Context) -> Iterator[Finding]:
    given = c.cmd.get(DRAFT)
    if given is None or Path(given).resolve() != c.draft_dir.resolve():
        yield Finding(DRAFT, f"{DRAFT} is {given!r}, not the checked draft {c.draft_dir}",
                      "the server would load a different (or no) draft than the one these checks describe",
                      f"{DRAFT} {c.draft_dir}", {DRAFT: str(c.draft_dir)})


def chain_shape(c: Context) -> Iterator[Finding]:
    topk, steps, ndt = c.cmd.get_int(TOPK), c.cmd.get_int(STEPS), c.cmd.get_int(NDT)
    if topk == 1 and steps is not None and ndt is not None and ndt != steps + 1:
        new_steps = min(ndt - 1, c.ttt_steps)
        yield Finding(f"{STEPS}/{NDT}", f"topk 1 with {steps} steps and {ndt} draft tokens",
                      f"with topk 1 SGLang forces num_draft_tokens = num_steps + 1 = {steps + 1}, silently; the draft "
                      f"was trained for {c.ttt_steps} steps",
                      f"{STEPS} {new_steps} {NDT} {new_steps + 1}", {STEPS: str(new_steps), NDT: str(new_steps + 1)})


def layer_ids(c: Context) -> Iterator[Finding]:
    m, n = c.manifest, c.manifest.n_layers
    expected = to_sglang(m.taps.aux)
    uncapturable = sglang_uncapturable(n, expected)
    nested = (c.cfg.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    top = c.cfg.get("eagle_aux_hidden_state_layer_ids")
    recapture = (f"recapture and retrain with capturable taps: draftset capture BUILD --model {m.model_dir} "
                 f"--layers {','.join(map(str, default_aux_layers(n)))}; draftset train CAPTURE")
    if uncapturable:
        yield Finding("draft config.json (capture manifest taps)",
                      f"the draft was trained on HF taps {m.taps.aux}; as SGLang ids {expected} "
                      f"{uncapturable} can never be captured (0 = embedding; ids ≥ {n - 1})",
                      "serving would feed the draft other layers than it was trained on", recapture)
    key = "eagle_config.eagle_aux_hidden_state_layer_ids"
    if nested != expected:
        hint = (" (these are the HF/vLLM ids: SGLang adds +1, so every tap is one layer late)"
                if nested == m.taps.aux else "")
        yield Finding(f"draft config.json {key}",
                      f"SGLang would capture ids {nested} (HF {from_sglang(nested) if nested else 'defaults'}) but "
                      f"training used HF {m.taps.aux}{hint}",
                      "a wiring mismatch keeps the server running while acceptance falls toward chance",
                      f"set {key} = {expected} (draftset export writes it from the manifest)"
                      if not uncapturable else recapture)
    if top != m.taps.aux:
        yield Finding("draft config.json eagle_aux_hidden_state_layer_ids",
                      f"top-level ids {top} differ from the manifest's HF ids {m.taps.aux}",
                      "vLLM/speculators read this key as-is", f"set eagle_aux_hidden_state_layer_ids = {m.taps.aux}")


def weight_keys(c: Context) -> Iterator[Finding]:
    foreign = sorted(k for k in c.shapes if not (k.startswith(SGLANG_KEYS) or k in SGLANG_BUFFERS))
    missing = [k for k in REQUIRED if k not in c.shapes]
    if foreign or missing:
        renamed = sorted({k.split(".", 2)[2].split(".")[0] for k in foreign if k.startswith("layers.0.")})
        yield Finding("draft model.safetensors keys",
                      f"keys SGLang does not load: {foreign[:4]}{'…' if len(foreign) > 4 else ''}; missing: {missing}",
                      "SGLang's llama_eagle3 loader skips unknown names silently, so those weights stay random",
                      "rename layers.0.* → midlayer.* " + (f"({', '.join(renamed)}) " if renamed else "")
                      + "and re-export: draftset export CHECKPOINT")


def vocab(c: Context) -> Iterator[Finding]:
    k, v = c.cfg.get("draft_vocab_size"), c.cfg.get("vocab_size")
    facts = {"lm_head rows": (c.shapes.get("lm_head.weight") or [None])[0], "d2t length": (c.shapes.get("d2t") or [None])[0]}
    bad = {name: got for name, got in facts.items() if got != k}
    if (c.shapes.get("t2d") or [None])[0] not in (None, c.manifest.vocab_size) or v != c.manifest.vocab_size:
        bad["target vocab"] = v
    if bad:
        yield Finding("draft config.json draft_vocab_size/vocab_size", f"draft_vocab_size {k} vs {bad}; target vocab "
                      f"{c.manifest.vocab_size}", "a mismatched d2t maps draft tokens to the wrong target tokens",
                      "re-export from the checkpoint with the build's vocab.safetensors")


def context_length(c: Context) -> Iterator[Finding]:
    trained = c.cfg.get("draftset", {}).get("max_length") or c.manifest.max_length
    served = c.cmd.get_int("--context-length")
    if trained and served and served > trained:
        yield Finding("--context-length", f"serving context {served} > training length {trained}",
                      "past its training length the draft's acceptance collapses and speculation costs more than it saves",
                      f"--context-length {trained}, or train on longer rows", {"--context-length": str(trained)})


def template_and_target(c: Context) -> Iterator[Finding]:
    m = c.manifest
    model_path = Path(c.cmd.get("--model-path") or "")
    if model_path.is_dir() and (model_path / "config.json").exists() and model_revision(model_path) != m.model_revision:
        yield Finding("--model-path", f"target {model_path} is not the captured target ({m.model_id} {m.model_revision})",
                      "the draft predicts the hidden states of the model it was trained on", f"--model-path {m.model_dir}",
                      {"--model-path": m.model_dir})
    flag = c.cmd.get("--chat-template")
    if flag is not None and m.chat_template_sha256:
        if template_sha256(Path(flag)) != m.chat_template_sha256:
            yield Finding("--chat-template", f"serving template {flag!r} differs from the training template "
                          f"(sha256 {m.chat_template_sha256[:12]}…)", "prompts tokenised differently from training "
                          "shift every hidden state the draft sees", "drop --chat-template to use the model's own "
                          "template", {"--chat-template": None})
    if c.system_prompt is not None and c.system_prompt != (m.system_prompt or ""):
        yield Finding("client system prompt", f"serving system prompt {c.system_prompt[:40]!r} ≠ training "
                      f"{(m.system_prompt or '')[:40]!r}", "a system-prompt mismatch cut accept length 5.88 → 2.42 in "
                      "SGLang's own tests", "send the training system prompt, or rebuild with the serving one")
    if c.thinking is not None and m.thinking is not None and c.thinking != m.thinking:
        yield Finding("client thinking mode", f"serving thinking={c.thinking}, training thinking={m.thinking}",
                      "thinking and non-thinking answers are different distributions for the draft",
                      f"serve with enable_thinking={m.thinking}, or rebuild and retrain with thinking={c.thinking}")


RULES: list[Callable[[Context], Iterator[Finding]]] = [
    algorithm, draft_path, chain_shape, layer_ids, weight_keys, vocab, context_length, template_and_target]
