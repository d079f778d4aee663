"""`draftset check serve DRAFT -- <launch command>`: lint a serving command against the draft.

The command is read as its engine reads it (SGLang: sglang_args.py + sglang_startup.py; vLLM:
vllm_serve.py), the target's config.json decides the architecture-dependent rules (layer ids,
auto-choice), and each finding names its rule id and the engine source it follows. Flag fixes are
applied together to print one corrected command.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from eval.checks.serve_arch import draft_architecture
from eval.checks.serve_context import Draft, Finding, resolve_target
from eval.checks.serve_draft_rules import (
    serving_facts,
    sglang_layers,
    vllm_layers,
    weights,
)
from eval.checks.serve_limits import context_limits, rope_settings, vllm_max_model_len
from eval.checks.serve_mla_draft import mla_draft_rules, without_llama_key_rules
from eval.checks.serve_rules import FLAG_RULES, SGLangContext, parse_errors
from eval.checks.sglang_args import LaunchCommand
from eval.checks.sglang_flags import SGLANG_VERSION, native_parser, native_version
from eval.checks.sglang_startup import resolve
from eval.checks.vllm_serve import VllmCommand, vllm_rules
from pipeline.capture.layers import sglang_tap_rule, vllm_tap_rule


@dataclass
class ServeReport:
    engine: str
    command: LaunchCommand | VllmCommand
    findings: list[Finding]
    target_origin: str
    rules_applied: list[str] = field(default_factory=list)
    parser: str = f"built-in SGLang {SGLANG_VERSION} table"
    fixed: str | None = None  # the corrected command, re-checked until nothing more to fix

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def clean(self) -> bool:
        return not self.findings

    @property
    def verdict(self) -> str:
        return "error" if self.errors else ("warning" if self.findings else "clean")

    def corrected(self) -> str | None:
        return self.fixed if self.fixed is not None else self.one_fix()

    def one_fix(self) -> str | None:
        if self.clean:
            return None
        if isinstance(self.command, VllmCommand):
            return _vllm_corrected(self.command, self.findings)
        cmd = self.command
        for f in self.findings:  # parse errors: replace the offending flag by the one it most likely means
            if f.rule == "sglang.args.ambiguous":
                cmd = _swap_flag(cmd, f.flag, f.fix.split(": ", 1)[1])
            elif f.rule == "sglang.args.unknown":
                for pair in f.fix.split("; "):
                    old, _, new = pair.partition(" → ")
                    if new.startswith("--"):
                        cmd = _swap_flag(cmd, old, new)
        changes: dict[str, str | None] = {}
        for f in self.findings:
            changes.update(f.changes)
        if cmd.values is None:  # re-read the repaired command so flag edits land on its options
            cmd = LaunchCommand.parse(cmd.prefix + cmd.args)
        return cmd.with_changes(changes).render() if cmd.values is not None else cmd.render()

    def as_json(self) -> dict:
        return {
            "engine": self.engine,
            "verdict": self.verdict,
            "target_config": self.target_origin,
            "rules_applied": self.rules_applied,
            "parser": self.parser,
            "findings": [f.as_json() for f in self.findings],
            "corrected_command": self.corrected(),
        }


def _swap_flag(cmd: LaunchCommand, written: str, new: str) -> LaunchCommand:
    for i, tok in enumerate(cmd.args):
        name, eq, value = tok.partition("=")
        if name == written:
            return cmd.replace_token(i, f"{new}={value}" if eq else new)
    return cmd


def is_vllm(tokens: list[str]) -> bool:
    return (
        any(
            os.path.basename(t) == "vllm" and i + 1 < len(tokens) and tokens[i + 1] == "serve"
            for i, t in enumerate(tokens)
        )
        or "vllm.entrypoints.openai.api_server" in tokens
    )


def check_serve(
    draft_dir: Path,
    argv: list[str] | str,
    system_prompt: str | None = None,
    thinking: bool | None = None,
    target_config: Path | None = None,
) -> ServeReport:
    report = _check(draft_dir, argv, system_prompt, thinking, target_config)
    fixed, current = None, report
    for _ in range(3):  # a repaired flag can reveal the next problem (misspelt --speculative-algoritm EAGLE)
        step = current.one_fix()
        if step is None or step == fixed:
            break
        fixed = step
        current = _check(draft_dir, step, system_prompt, thinking, target_config)
        if not current.errors and not [f for f in current.findings if f.changes]:
            break
    report.fixed = fixed
    return report


def _check(
    draft_dir: Path, argv: list[str] | str, system_prompt: str | None, thinking: bool | None, target_config: Path | None
) -> ServeReport:
    tokens = shlex.split(argv) if isinstance(argv, str) else list(argv)
    draft = Draft.load(Path(draft_dir))
    if is_vllm(tokens):
        vcmd = VllmCommand.parse(tokens)
        target, origin = resolve_target(draft, vcmd.model, target_config)
        vfindings = [
            *vllm_rules(vcmd, draft),
            *vllm_layers(draft, target, origin),
            *without_llama_key_rules(draft, list(weights(draft, target, "vllm"))),
            *mla_draft_rules(draft, "vllm"),
            *serving_facts(draft, vcmd.model, None, system_prompt, thinking),
            *context_limits(draft, *vllm_max_model_len(vcmd.tokens), target, "vllm"),
            *rope_settings(draft),
            *draft_architecture(draft, target, "vllm"),
        ]
        return ServeReport("vllm", vcmd, vfindings, origin, [vllm_tap_rule(target).describe()], "vLLM 0.33.0 forms")
    cmd = LaunchCommand.parse(tokens)
    native = native_parser()
    findings: list[Finding] = []
    parser_note = f"built-in SGLang {SGLANG_VERSION} table"
    if native is not None:
        real = LaunchCommand.parse(tokens, parser=native)
        parser_note = f"installed sglang {native_version()} (compared with the built-in {SGLANG_VERSION} table)"
        note = _disagreement(cmd, real)
        if note:
            findings.append(
                Finding(
                    "sglang.args.native_disagrees",
                    "warning",
                    "(parser)",
                    note,
                    "the built-in table mirrors another SGLang version than the one installed",
                    "trust the installed parser; update eval/checks/data for this version",
                    f"installed sglang {native_version()}",
                )
            )
        cmd = real
    target, origin = resolve_target(draft, cmd.get("model_path") if cmd.values else None, target_config)
    findings += list(parse_errors(cmd))
    arch = (target.get("architectures") or [None])[0]
    applied = []
    if cmd.values is not None:
        ctx = SGLangContext(
            draft, cmd, resolve(cmd.values, arch, (draft.cfg.get("architectures") or [None])[0]), target, origin
        )
        for rule in FLAG_RULES:
            findings += list(rule(ctx))
    applied.append(sglang_tap_rule(target).describe())
    findings += [
        *sglang_layers(draft, target, origin),
        *without_llama_key_rules(draft, list(weights(draft, target, "sglang"))),
    ]
    findings += list(mla_draft_rules(draft, "sglang"))
    findings += [*rope_settings(draft), *draft_architecture(draft, target, "sglang")]
    findings += list(
        serving_facts(
            draft,
            cmd.get("model_path") if cmd.values else None,
            cmd.get("chat_template") if cmd.values else None,
            system_prompt,
            thinking,
        )
    )
    return ServeReport("sglang", cmd, findings, origin, applied, parser_note)


def _disagreement(builtin: LaunchCommand, real: LaunchCommand) -> str | None:
    if (builtin.failure is None) != (real.failure is None):
        return f"built-in table: {builtin.failure or 'accepted'}; installed sglang: {real.failure or 'accepted'}"
    if builtin.values is None or real.values is None:
        return None
    # only what the command sets: the built-in parser keeps no defaults (unset stays None)
    diff = sorted(k for k in builtin.explicit if builtin.values.get(k) != real.values.get(k))
    return f"values differ for {diff}" if diff else None


def _vllm_corrected(cmd: VllmCommand, findings: list[Finding]) -> str:
    spec = dict(cmd.spec or {})
    for f in findings:
        if f.rule == "vllm.method":
            spec["method"] = "eagle3"
        if f.rule in ("vllm.draft.path", "vllm.speculative.missing"):
            spec.update(
                json.loads(f.fix.split(" ", 1)[1].strip("'"))
                if f.rule == "vllm.speculative.missing"
                else {"model": f.fix.split('": "')[1].rstrip('"')}
            )
        if f.rule.startswith("vllm.tokens"):
            spec["num_speculative_tokens"] = int(f.fix.rsplit(" ", 1)[1])
    keep, skip = [], 0
    for tok in cmd.tokens:
        if skip:
            skip -= 1
            continue
        name = tok.partition("=")[0].replace("_", "-")
        if name in ("--speculative-config", "-sc", "--spec-method", "--spec-model", "--spec-tokens") or name.startswith(
            "--speculative-config."
        ):
            skip = 0 if "=" in tok else 1
            continue
        keep.append(tok)
    return " ".join(shlex.quote(t) for t in keep + ["--speculative-config", json.dumps(spec)])
