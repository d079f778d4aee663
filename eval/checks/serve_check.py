"""`draftset check serve DRAFT -- <sglang launch command>`: lint a serving config against the draft.

Each rule (eval/checks/serve_rules.py) guards one way a draft served at chance-level acceptance
without any error in the field. A finding names the flag, why it matters and the fix; flag fixes are
applied together to print one corrected command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eval.checks.serve_rules import RULES, Context, Finding
from eval.checks.sglang_args import LaunchCommand


@dataclass
class ServeReport:
    command: LaunchCommand
    findings: list[Finding]

    @property
    def clean(self) -> bool:
        return not self.findings

    def corrected(self) -> str:
        changes: dict[str, str | None] = {}
        for f in self.findings:
            changes.update(f.changes)
        return self.command.with_changes(changes).render()


def check_serve(draft_dir: Path, argv: list[str] | str, system_prompt: str | None = None,
                thinking: bool | None = None) -> ServeReport:
    ctx = Context.load(Path(draft_dir), LaunchCommand.parse(argv), system_prompt, thinking)
    return ServeReport(ctx.cmd, [f for rule in RULES for f in rule(ctx)])
