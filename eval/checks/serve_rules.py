"""The SGLang launch-command rules `check serve` enforces, one small function each.

Each finding carries a stable rule id and the SGLang 0.5.23 file it follows (README lists them all).
The command has already been read by SGLang's own argument table (sglang_args.py) and its startup
resolution replayed (sglang_startup.py); these rules compare the outcome with what the draft needs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eval.checks.serve_context import Draft, Finding
from eval.checks.serve_limits import context_limits
from eval.checks.sglang_args import LaunchCommand, resolve_flag
from eval.checks.sglang_flags import SGLANG_VERSION, builtin_table
from eval.checks.sglang_startup import HOOK, Startup

V = SGLANG_VERSION
ARGS_SRC = f"python/sglang/srt/server_args.py (prepare_server_args, argparse), SGLang {V}"
HOOK_SRC = f"{HOOK}, SGLang {V}"
ALGO, DRAFT = "speculative_algorithm", "speculative_draft_model_path"
STEPS, TOPK, NDT = "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"


@dataclass
class SGLangContext:
    draft: Draft
    cmd: LaunchCommand
    startup: Startup
    target: dict
    target_origin: str

    @property
    def arch(self) -> str | None:
        return (self.target.get("architectures") or [None])[0]


def parse_errors(cmd: LaunchCommand) -> Iterator[Finding]:
    """The server would exit before loading anything (argparse exit 2, or `sglang serve` without a model)."""
    f = cmd.failure
    if f is None:
        return
    msg = str(f)
    if "config_parser" in cmd.failure_source:
        yield Finding(
            "sglang.args.config",
            "error",
            "--config",
            msg,
            "prepare_server_args raises before parsing",
            "give one existing .yaml/.yml file holding a mapping",
            cmd.failure_source + f", SGLang {V}",
        )
        return
    if f.status == 1:
        yield Finding(
            "sglang.args.model_path",
            "error",
            "--model-path",
            msg,
            "the server exits at once",
            "sglang serve MODEL ... or --model-path MODEL (spelled out)",
            cmd.failure_source + f", SGLang {V}",
        )
        return
    if msg.startswith("ambiguous option"):
        written = msg.split(":", 1)[1].split(" could match")[0].strip()
        written_flag = written.partition("=")[0]
        options = resolve_flag(written_flag)
        best = _suggest(written_flag, options)
        yield Finding(
            "sglang.args.ambiguous",
            "error",
            written_flag,
            f"argparse exits 2: {msg}",
            "argparse accepts a prefix only when it names exactly one option; the server never starts",
            f"spell it out: {best}",
            ARGS_SRC,
        )
    elif msg.startswith("unrecognized arguments"):
        unknown = msg.split(":", 1)[1].split()
        flags = [u for u in unknown if u.startswith("-")]
        hint = "; ".join(f"{u.partition('=')[0]} → {_suggest(u.partition('=')[0], _all_flags())}" for u in flags[:3])
        yield Finding(
            "sglang.args.unknown",
            "error",
            " ".join(flags) or unknown[0],
            f"argparse exits 2: {msg}",
            "SGLang rejects any flag it does not register; the server never starts",
            hint or "remove the stray positional argument (sglang serve takes the model only first)",
            ARGS_SRC,
        )
    elif f.status == 0:
        yield Finding(
            "sglang.args.help",
            "error",
            "-h/--help",
            "the command prints help and exits 0",
            "no server is started",
            "remove -h/--help",
            ARGS_SRC,
        )
    else:
        yield Finding(
            "sglang.args.invalid",
            "error",
            msg.split(":")[0].replace("argument ", ""),
            f"argparse exits 2: {msg}",
            "the server never starts",
            "give the flag a valid value",
            ARGS_SRC,
        )


def _all_flags() -> list[str]:
    return [f for spec in builtin_table()["actions"] for f in spec["flags"] if f.startswith("--")]


def _suggest(written: str, options: list[str]) -> str:
    close = difflib.get_close_matches(written, options, n=1, cutoff=0.5)
    return close[0] if close else (options[0] if options else "(no close SGLang flag)")


def algorithm(c: SGLangContext) -> Iterator[Finding]:
    s, taps = c.startup, c.draft.trained_taps or []
    flag = c.cmd.written(ALGO)
    if s.crash and s.crash.startswith("ValueError: Unknown") or s.crash and "Gemma4" in s.crash:
        yield Finding(
            "sglang.algorithm.unknown",
            "error",
            flag,
            s.crash,
            "startup raises before loading weights",
            f"{flag} EAGLE3",
            f"{s.crash_source}, SGLang {V}",
            {ALGO: "EAGLE3"},
        )
    elif s.algorithm is None:
        yield Finding(
            "sglang.algorithm.missing",
            "error",
            "--speculative-algorithm",
            f"no speculative algorithm{' (' + repr(s.written) + ')' if s.written else ''}: the draft is never loaded",
            "SGLang serves without speculation; --speculative-draft-model-path alone does nothing",
            "--speculative-algorithm EAGLE3",
            HOOK_SRC,
            {ALGO: "EAGLE3"},
        )
    elif s.algorithm != "EAGLE3":
        alias = f" ({s.written} is read as {s.algorithm})" if (s.written or "").upper() != s.algorithm else ""
        yield Finding(
            "sglang.algorithm.not_eagle3",
            "error",
            flag,
            f"{flag} {s.written}{alias}; the draft is an EAGLE-3 draft with {len(taps)} aux taps",
            "only EAGLE3 makes SGLang capture aux hidden states (spec_aux_hidden_state.py); under "
            "EAGLE/NEXTN the fc layer is skipped silently and accept length is 1.00 with no error",
            f"{flag} EAGLE3",
            f"{HOOK} (_resolve_speculative_algorithm_alias) + "
            f"python/sglang/srt/speculative/spec_info.py (is_eagle3), SGLang {V}",
            {ALGO: "EAGLE3"},
        )


def draft_path(c: SGLangContext) -> Iterator[Finding]:
    given = c.cmd.get(DRAFT)
    if given is None or Path(given).resolve() != c.draft.directory.resolve():
        yield Finding(
            "sglang.draft.path",
            "error",
            c.cmd.written(DRAFT),
            f"draft path is {given!r}, not the checked draft {c.draft.directory}",
            "the server would load another draft (or, on DeepSeek-family targets, the target itself as an "
            "MTP draft) than the one these checks describe",
            f"--speculative-draft-model-path {c.draft.directory}",
            HOOK_SRC,
            {DRAFT: str(c.draft.directory)},
        )


def chain(c: SGLangContext) -> Iterator[Finding]:
    s, ttt = c.startup, c.draft.ttt_steps
    if (s.algorithm or "") not in ("EAGLE", "EAGLE3", "STANDALONE") and not (
        s.crash and "_handle_eagle_family" in s.crash
    ):
        return
    if s.crash and "AssertionError" in s.crash:
        steps = ttt or 3
        yield Finding(
            "sglang.chain.topk_without_steps",
            "error",
            "--speculative-num-steps",
            s.crash,
            "startup stops on the assertion; SGLang only auto-chooses when all three are unset",
            f"add --speculative-num-steps {steps}",
            HOOK_SRC,
            {STEPS: str(steps)},
        )
        return
    if s.crash and "TypeError" in s.crash:
        ndt = c.cmd.get(NDT)
        yield Finding(
            "sglang.chain.steps_without_topk",
            "error",
            "--speculative-eagle-topk",
            s.crash,
            "startup crashes: steps without topk is not a configuration SGLang completes",
            "add --speculative-eagle-topk 1"
            + ("" if ndt else f" --speculative-num-draft-tokens {c.cmd.get(STEPS) + 1}"),
            HOOK_SRC,
            {TOPK: "1", **({} if ndt else {NDT: str(c.cmd.get(STEPS) + 1)})},
        )
        return
    if s.adaptive or ttt is None:
        return
    if s.auto is not None and s.auto[0] != ttt:
        topk = s.auto[1]
        ndt = ttt + 1 if topk == 1 else max(s.auto[2], ttt + 1)
        yield Finding(
            "sglang.chain.auto_mismatch",
            "warning",
            "--speculative-num-steps",
            f"no steps/topk/draft tokens given: SGLang picks {s.auto} for {c.arch} but the draft was "
            f"trained for {ttt} steps",
            "the auto-choice depends on the target architecture (_auto_choose_speculative_params), not on the draft",
            f"--speculative-num-steps {ttt} --speculative-eagle-topk {topk} --speculative-num-draft-tokens {ndt}",
            HOOK_SRC,
            {STEPS: str(ttt), TOPK: str(topk), NDT: str(ndt)},
        )
    if s.forced_draft_tokens is not None:
        given, forced = s.forced_draft_tokens
        steps = min(max(given or 0, forced) - 1, ttt)
        yield Finding(
            "sglang.chain.topk1_draft_tokens",
            "error",
            f"{c.cmd.written(STEPS)}/{c.cmd.written(NDT)}",
            f"topk 1 with {s.steps} steps and {given} draft tokens",
            f"with topk 1 SGLang forces num_draft_tokens = num_steps + 1 = {forced}, with only a log line; "
            f"the draft was trained for {ttt} steps",
            f"--speculative-num-steps {steps} --speculative-num-draft-tokens {steps + 1}",
            HOOK_SRC,
            {STEPS: str(steps), NDT: str(steps + 1)},
        )
    elif s.steps is not None and s.auto is None and s.steps > ttt:
        yield Finding(
            "sglang.chain.beyond_training",
            "warning",
            c.cmd.written(STEPS),
            f"{s.steps} speculative steps, the draft was trained for {ttt} (TTT steps)",
            "steps past the trained horizon are drafted from states the draft never learned to read",
            f"--speculative-num-steps {ttt}" + (f" --speculative-num-draft-tokens {ttt + 1}" if s.topk == 1 else ""),
            HOOK_SRC,
            {STEPS: str(ttt), **({NDT: str(ttt + 1)} if s.topk == 1 else {})},
        )
    if s.topk is not None and s.topk > 1 and s.draft_tokens is None:
        yield Finding(
            "sglang.chain.tree_size",
            "warning",
            "--speculative-num-draft-tokens",
            f"topk {s.topk} without --speculative-num-draft-tokens",
            "nothing in startup sets the tree size when topk > 1",
            "set --speculative-num-draft-tokens explicitly",
            HOOK_SRC,
        )


def context_length(c: SGLangContext) -> Iterator[Finding]:
    """--context-length (or, unset, the target's own context) against the draft's trained positions."""
    served = c.cmd.get("context_length")
    flag = c.cmd.written("context_length") if served else None
    yield from context_limits(c.draft, served, flag, c.target, "sglang", c.cmd.prefix)


FLAG_RULES: list[Callable[[SGLangContext], Iterator[Finding]]] = [algorithm, draft_path, chain, context_length]
