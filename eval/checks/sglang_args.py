"""Read an SGLang launch command the way SGLang 0.5.23 reads it.

Entry points (each rule names the file it follows):
  `python -m sglang.launch_server ARGS`  python/sglang/launch_server.py: prepare_server_args(sys.argv[1:])
  `sglang serve [MODEL] ARGS`            python/sglang/cli/serve.py: `--model-type X` is taken out first
        (exact spelling only); a first argument that does not start with "-" becomes `--model-path MODEL`;
        the model must then be spelled exactly `--model-path`/`--model` (cli/utils.py try_get_model_path),
        or serve stops with "Error: --model-path is required" before argparse runs.
  bare `--flag ...` lists are read as launch_server arguments.
The arguments then go through argparse with SGLang's full option table (eval/checks/sglang_flags.py), so
prefixes, aliases, `--flag=value`, ambiguity and unknown flags behave as on the server. The original
tokens are kept so a corrected command is the user's own command with the fewest edits.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.checks.sglang_flags import ParseFailure, build_parser, builtin_table

_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass
class Span:
    start: int  # index into LaunchCommand.args
    stop: int  # exclusive
    written: str  # the flag as typed (before any "=")
    dest: str
    inline: bool  # --flag=value


@dataclass
class LaunchCommand:
    prefix: list[str]  # env assignments + `python -m sglang.launch_server` / `sglang serve`
    args: list[str]  # everything after the prefix, as typed
    entry: str  # "launch_server" | "serve" | "bare"
    values: dict | None = None  # dest -> value as argparse produced it (None when parsing failed)
    explicit: set[str] = field(default_factory=set)  # dests given on the command line
    failure: ParseFailure | None = None
    failure_source: str = "python/sglang/srt/server_args.py"
    spans: list[Span] = field(default_factory=list)
    positional_model: bool = False  # `sglang serve MODEL`
    native_note: str | None = None  # disagreement with SGLang's own parser, when importable

    # -- reading -------------------------------------------------------------------------------
    @classmethod
    def parse(cls, argv: list[str] | str, parser: argparse.ArgumentParser | None = None) -> LaunchCommand:
        tokens = shlex.split(argv) if isinstance(argv, str) else list(argv)
        prefix, args, entry = _split_entry(tokens)
        cmd = cls(prefix, args, entry)
        server_argv, cmd.positional_model = cmd._server_argv()
        if cmd.failure is not None:
            return cmd
        try:
            ns = (parser or build_parser()).parse_args(server_argv)
        except ParseFailure as exc:
            cmd.failure = exc
            return cmd
        cmd.values = vars(ns)
        cmd.spans = _spans(cmd.args, cmd.entry == "serve", cmd.positional_model)
        cmd.explicit = {s.dest for s in cmd.spans}
        return cmd

    def _server_argv(self) -> tuple[list[str], bool]:
        args, positional = self._serve_argv()
        if "--config" in args and self.failure is None:
            try:
                args = _merge_config(args)
            except (OSError, ValueError) as exc:
                self.failure = ParseFailure(f"ValueError: {exc}", status=1)
                self.failure_source = "python/sglang/srt/utils/server_args_config_parser.py"
        return args, positional

    def _serve_argv(self) -> tuple[list[str], bool]:
        args = list(self.args)
        if self.entry != "serve":
            return args, False
        args = [a for i, a in enumerate(args) if not _is_model_type(args, i)]
        positional = bool(args) and not args[0].startswith("-")
        if positional:
            args = ["--model-path", *args]
        elif not any(
            a in ("--model-path", "--model") or a.startswith(("--model-path=", "--model=")) for a in args
        ) and not any(a in ("-h", "--help") for a in args):
            self.failure = ParseFailure(
                "Error: --model-path is required. Please provide the path to the model. "
                "(`sglang serve` looks for the exact spelling --model-path/--model or a "
                "first positional argument before argparse runs)",
                status=1,
            )
            self.failure_source = "python/sglang/cli/serve.py + cli/utils.py (get_model_path)"
        return args, positional

    def get(self, dest: str) -> Any:
        return None if self.values is None else self.values.get(dest)

    def span(self, dest: str) -> Span | None:
        return next((s for s in reversed(self.spans) if s.dest == dest), None)

    def written(self, dest: str) -> str:
        s = self.span(dest)
        return s.written if s else _canonical(dest)

    # -- rewriting -----------------------------------------------------------------------------
    def with_changes(self, changes: dict[str, str | None]) -> LaunchCommand:
        """Set (or, with None, remove) options by dest; the last occurrence is edited, new ones appended."""
        args = list(self.args)
        edits = []
        for dest, value in changes.items():
            s = self.span(dest)
            if s is None:
                if value is not None:
                    edits.append((len(args), len(args), [_canonical(dest), value]))
                continue
            if value is None:
                edits.append((s.start, s.stop, []))
            elif s.inline:
                edits.append((s.start, s.stop, [f"{s.written}={value}"]))
            elif s.written == "":  # `sglang serve MODEL`
                edits.append((s.start, s.stop, [value]))
            else:
                edits.append((s.start, s.stop, [s.written, value]))
        for start, stop, new in sorted(edits, key=lambda e: e[0], reverse=True):
            args[start:stop] = new
        return LaunchCommand(self.prefix, args, self.entry)

    def replace_token(self, index: int, new: str) -> LaunchCommand:
        args = list(self.args)
        args[index] = new
        return LaunchCommand(self.prefix, args, self.entry)

    def render(self) -> str:
        return " ".join(shlex.quote(p) for p in self.prefix + self.args)


def _merge_config(args: list[str]) -> list[str]:
    """prepare_server_args + ConfigArgumentMerger: YAML keys become `--key value` *before* the command line
    (command line wins); store_true keys are added only when true; lists expand; dicts become JSON."""
    import yaml

    if args.count("--config") > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    at = args.index("--config")
    if at == len(args) - 1:
        raise ValueError("No config file specified after --config flag!")
    path = Path(args[at + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(f"Config file must be YAML format, got: {path.suffix}")
    if not path.exists():
        raise ValueError(f"Config file not found: {path}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")  # noqa: TRY004  (as SGLang raises)
    switches = {
        k
        for spec in builtin_table()["actions"]
        if spec["kind"] == "store_true"
        for k in [spec["dest"], *(f[2:].replace("-", "_") for f in spec["flags"] if f.startswith("--"))]
    }
    out: list[str] = []
    for key, value in data.items():
        if isinstance(value, bool):
            if key.replace("-", "_") in switches:
                out += [f"--{key}"] if value else []
            else:
                out += [f"--{key}", str(value).lower()]
        elif isinstance(value, list):
            out += [f"--{key}", *(str(v) for v in value)] if value else []
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out + args[:at] + args[at + 2 :]


def _split_entry(tokens: list[str]) -> tuple[list[str], list[str], str]:
    i = 0
    while i < len(tokens) and _ENV.match(tokens[i]) and not tokens[i].startswith("-"):
        i += 1
    rest = tokens[i:]
    for j, tok in enumerate(rest):
        if tok == "-m" and j + 1 < len(rest) and rest[j + 1] == "sglang.launch_server":
            return tokens[: i + j + 2], rest[j + 2 :], "launch_server"
        if os.path.basename(tok) == "sglang" and j + 1 < len(rest) and rest[j + 1] == "serve":
            return tokens[: i + j + 2], rest[j + 2 :], "serve"
        if tok.startswith("-"):
            break
    return tokens[:i], rest, "bare"


def _is_model_type(args: list[str], i: int) -> bool:
    """`sglang serve` removes `--model-type X` / `--model-type=X` (exact spelling) before parsing."""
    return args[i] == "--model-type" or args[i].startswith("--model-type=") or (i > 0 and args[i - 1] == "--model-type")


def _option_map() -> dict[str, dict]:
    return {flag: spec for spec in builtin_table()["actions"] for flag in spec["flags"]}


def _canonical(dest: str) -> str:
    for spec in builtin_table()["actions"]:
        if spec["dest"] == dest:
            return spec["flags"][0]
    return "--" + dest.replace("_", "-")


def resolve_flag(written: str) -> list[str]:
    """The option strings argparse would consider for `written` (one = resolved; several = ambiguous)."""
    options = _option_map()
    if written in options:
        return [written]
    return [o for o in options if o.startswith(written) and o.startswith("--")]


def _takes(spec: dict) -> str:
    if spec["kind"] not in ("store", "append"):
        return "0"
    return spec["nargs"] or "1"


def _optionlike(tok: str) -> bool:
    return tok.startswith("-") and tok != "-" and not _NUMBER.match(tok)


def _spans(args: list[str], serve: bool, positional: bool) -> list[Span]:
    """Where each option sits in `args` (only called after argparse accepted the command)."""
    options, spans, i = _option_map(), [], 0
    if positional:
        spans.append(Span(0, 1, "", "model_path", False))
        i = 1
    while i < len(args):
        tok = args[i]
        if serve and _is_model_type(args, i):
            i += 1
            continue
        if not _optionlike(tok):
            i += 1
            continue
        written, eq, _ = tok.partition("=")
        match = resolve_flag(written)
        spec = options.get(match[0]) if len(match) == 1 else None
        if spec is None:
            i += 1
            continue
        stop = i + 1
        if not eq:
            takes = _takes(spec)
            if takes == "1":
                stop = i + 2
            elif takes in ("?", "+", "*"):
                while stop < len(args) and not _optionlike(args[stop]):
                    stop += 1
                    if takes == "?":
                        break
        spans.append(Span(i, stop, written, spec["dest"], bool(eq)))
        i = stop
    return spans
