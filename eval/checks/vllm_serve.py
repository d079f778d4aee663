"""`vllm serve MODEL --speculative-config '{json}'`: read the speculative settings as vLLM 0.33.0 does.

Forms vLLM accepts (vllm/utils/argparse_utils.py FlexibleArgumentParser; vllm/engine/arg_utils.py):
`--speculative-config JSON`, `--speculative_config` (underscores become dashes), `-sc JSON`, `--flag=JSON`,
dotted keys `--speculative-config.method eagle3`, and the shorthands `--spec-method/--spec-model/--spec-tokens`
(mutually exclusive with the same key in the JSON). Only these flags are read; vLLM's other flags are
not checked here (its full table is not mirrored). Then vllm/config/speculative.py SpeculativeConfig:
with no `method`, a model path containing "eagle3" means eagle3, "eagle-" means eagle, anything else
is loaded as an independent `draft_model`; `num_speculative_tokens` is required for EAGLE drafts (their
config has no n_predict).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from eval.checks.serve_context import Draft, Finding

VERSION = "0.33.0"
CONFIG_SRC = f"vllm/config/speculative.py (SpeculativeConfig.__post_init__), vLLM {VERSION}"
ARGS_SRC = f"vllm/utils/argparse_utils.py + vllm/engine/arg_utils.py, vLLM {VERSION}"
_KEY = re.compile(r"(?<=--)[^.]*")


@dataclass
class VllmCommand:
    tokens: list[str]
    model: str | None = None
    spec: dict | None = None
    errors: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, argv: list[str] | str) -> VllmCommand:
        tokens = shlex.split(argv) if isinstance(argv, str) else list(argv)
        cmd = cls(tokens)
        try:
            i = next(j for j, t in enumerate(tokens) if t == "serve") + 1
        except StopIteration:
            i = 0
        args = [_dashes(a) if a.startswith("--") else a for a in tokens[i:]]
        if args and not args[0].startswith("-"):
            cmd.model, args = args[0], args[1:]
        spec: dict = {}
        shorthand: dict = {}
        j = 0
        while j < len(args):
            name, eq, value = args[j].partition("=")
            if not eq and j + 1 < len(args):
                value = args[j + 1]
            step = 1 if eq else 2
            if name in ("--speculative-config", "-sc"):
                try:
                    loaded = json.loads(value)
                    spec.update({k.replace("-", "_"): v for k, v in loaded.items()})
                except (ValueError, AttributeError):
                    cmd.errors.append(f"--speculative-config is not a JSON object: {value!r}")
            elif name.startswith("--speculative-config."):
                key = name.split(".", 1)[1].replace("-", "_")
                try:
                    spec[key] = json.loads(value)
                except ValueError:
                    spec[key] = value
            elif name in ("--spec-method", "--spec-model", "--spec-tokens"):
                shorthand[
                    {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}[
                        name
                    ]
                ] = value
            elif name == "--model":
                cmd.model = value
            else:
                step = 1
            j += step
        for key, value in shorthand.items():
            if key in spec:
                cmd.errors.append(
                    f"--spec-{key.split('_')[-1]} and --speculative-config['{key}'] are mutually exclusive"
                )
            spec[key] = int(value) if key == "num_speculative_tokens" and str(value).isdigit() else value
        cmd.spec = spec or None
        return cmd


def _dashes(arg: str) -> str:
    """FlexibleArgumentParser: underscores become dashes in the key only (before "=" and the first ".")."""
    key, eq, value = arg.partition("=")
    return _KEY.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + eq + value


def vllm_rules(cmd: VllmCommand, draft: Draft) -> Iterator[Finding]:
    for err in cmd.errors:
        yield Finding(
            "vllm.args.speculative_config",
            "error",
            "--speculative-config",
            err,
            "vLLM stops while building its config",
            "pass one JSON object",
            ARGS_SRC,
        )
    spec = cmd.spec
    if spec is None:
        yield Finding(
            "vllm.speculative.missing",
            "error",
            "--speculative-config",
            "no speculative config: the draft is never loaded",
            "vLLM serves without speculation",
            f"--speculative-config '{_json(draft, draft.ttt_steps or 3)}'",
            CONFIG_SRC,
        )
        return
    model = spec.get("model")
    method = spec.get("method")
    if method is None and model:
        method = (
            "eagle3"
            if "eagle3" in str(model).lower()
            else ("eagle" if "eagle-" in str(model).lower() else "draft_model")
        )
    if method != "eagle3":
        detected = "" if spec.get("method") else f" (no method given: {model!r} is detected as {method})"
        yield Finding(
            "vllm.method",
            "error",
            "--speculative-config method",
            f"method is {method!r}{detected}, the draft is an EAGLE-3 draft",
            "only eagle3 feeds the draft the target's aux hidden states",
            'add "method": "eagle3"',
            CONFIG_SRC,
        )
    if model is None or Path(str(model)).resolve() != draft.directory.resolve():
        yield Finding(
            "vllm.draft.path",
            "error",
            "--speculative-config model",
            f"draft is {model!r}, not the checked draft {draft.directory}",
            "vLLM would load another draft",
            f'"model": "{draft.directory}"',
            CONFIG_SRC,
        )
    tokens, ttt = spec.get("num_speculative_tokens"), draft.ttt_steps
    if tokens is None:
        yield Finding(
            "vllm.tokens.missing",
            "error",
            "--speculative-config num_speculative_tokens",
            "num_speculative_tokens not given",
            "vLLM raises: EAGLE drafts carry no n_predict to default from",
            f'"num_speculative_tokens": {ttt or 3}',
            CONFIG_SRC,
        )
    elif not isinstance(tokens, int) or tokens <= 0:
        yield Finding(
            "vllm.tokens.invalid",
            "error",
            "--speculative-config num_speculative_tokens",
            f"num_speculative_tokens = {tokens!r}",
            "the config validation requires an integer > 0",
            f'"num_speculative_tokens": {ttt or 3}',
            CONFIG_SRC,
        )
    elif ttt is not None and tokens > ttt:
        yield Finding(
            "vllm.tokens.beyond_training",
            "warning",
            "--speculative-config num_speculative_tokens",
            f"{tokens} speculative tokens, the draft was trained for {ttt} steps",
            "steps past the trained horizon are drafted from states the draft never learned to read",
            f'"num_speculative_tokens": {ttt}',
            CONFIG_SRC,
        )


def _json(draft: Draft, tokens: int) -> str:
    return json.dumps({"method": "eagle3", "model": str(draft.directory), "num_speculative_tokens": tokens})
