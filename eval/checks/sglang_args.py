"""Parse and rewrite an SGLang launch command line (`python -m sglang.launch_server ...`).

Hand-written because SGLang is not installed where drafts are checked (and importing it would pull in
CUDA); its arguments are plain `--flag value`, `--flag=value` or bare boolean `--flag`, which is all
this needs. Order and unknown flags are preserved so the corrected command is the user's own.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

ALIASES = {"--model": "--model-path", "--speculative-draft-model": "--speculative-draft-model-path",
           "--speculative-draft": "--speculative-draft-model-path"}


@dataclass
class LaunchCommand:
    prefix: list[str]                         # e.g. ["python", "-m", "sglang.launch_server"]
    flags: list[tuple[str, str | None]]       # (canonical flag, value or None for a bare switch)

    @classmethod
    def parse(cls, argv: list[str] | str) -> LaunchCommand:
        tokens = shlex.split(argv) if isinstance(argv, str) else list(argv)
        first = next((i for i, t in enumerate(tokens) if t.startswith("--")), len(tokens))
        flags: list[tuple[str, str | None]] = []
        i = first
        while i < len(tokens):
            tok = tokens[i]
            if not tok.startswith("--"):
                flags.append(("", tok))   # a stray positional: kept verbatim
                i += 1
                continue
            name, eq, value = tok.partition("=")
            if not eq:
                has_value = i + 1 < len(tokens) and not tokens[i + 1].startswith("--")
                value = tokens[i + 1] if has_value else None
                i += 1 if has_value else 0
            flags.append((ALIASES.get(name, name), value))
            i += 1
        return cls(tokens[:first], flags)

    def get(self, flag: str) -> str | None:
        return next((v for f, v in reversed(self.flags) if f == flag), None)

    def has(self, flag: str) -> bool:
        return any(f == flag for f, _ in self.flags)

    def get_int(self, flag: str) -> int | None:
        value = self.get(flag)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def with_changes(self, changes: dict[str, str | None]) -> LaunchCommand:
        """Set (or, with None, remove) flags; new ones are appended."""
        flags = [(f, changes[f]) if f in changes else (f, v) for f, v in self.flags
                 if not (f in changes and changes[f] is None)]
        flags += [(f, v) for f, v in changes.items() if v is not None and not self.has(f)]
        return LaunchCommand(self.prefix, flags)

    def render(self) -> str:
        parts = list(self.prefix)
        for f, v in self.flags:
            parts += [p for p in (f, v) if p]
        return " ".join(shlex.quote(p) for p in parts)
