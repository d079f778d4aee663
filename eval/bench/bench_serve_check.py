"""Scoreboard: `check serve` verdicts vs what SGLang 0.5.23 / vLLM 0.33.0 would do, on the corpus.

    python -m eval.bench.bench_serve_check [--verbose]

A case is right when the verdict (clean / warning / error) matches and every expected rule id is
among the findings. A false alarm is a finding on a command the engine serves correctly; a miss is a
case whose expected rule is absent. The naive baseline in the same run reads the command the way the
checker did before issue #12: exact flag spellings only (plus a `--speculative-draft` alias), the
algorithm compared to "EAGLE3" verbatim, every target treated as Llama (ids written j-1), only
`midlayer.*` keys accepted, no auto-choice, no d2t dtype check.
"""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
from pathlib import Path

from eval.bench.serve_corpus import CASES
from eval.bench.serve_drafts import materialize
from eval.checks.serve_check import check_serve


def naive_verdict(draft: Path, command: str) -> str:
    tokens = shlex.split(command)
    alias = {
        "--model": "--model-path",
        "--speculative-draft-model": "--speculative-draft-model-path",
        "--speculative-draft": "--speculative-draft-model-path",
    }
    flags, i = {}, 0
    while i < len(tokens):
        name, eq, value = tokens[i].partition("=")
        if name.startswith("--"):
            if not eq and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                value, i = tokens[i + 1], i + 1
            flags[alias.get(name, name)] = value
        i += 1
    if "vllm" in tokens[:2]:
        return "clean"
    cfg = json.loads((draft / "config.json").read_text())
    errors = flags.get("--speculative-algorithm") != "EAGLE3"
    errors |= Path(flags.get("--speculative-draft-model-path") or "/nonexistent").resolve() != draft.resolve()
    steps, topk, ndt = (flags.get(f"--speculative-{k}") for k in ("num-steps", "eagle-topk", "num-draft-tokens"))
    errors |= topk == "1" and (steps or "").isdigit() and (ndt or "").isdigit() and int(ndt or 0) != int(steps or 0) + 1
    taps = cfg["draftset"]["hf_hidden_state_ids"]
    errors |= cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] != [j - 1 for j in taps]
    from safetensors import safe_open

    with safe_open(str(draft / "model.safetensors"), framework="numpy") as f:
        errors |= any(not k.startswith(("midlayer.", "fc.", "norm.", "lm_head.", "d2t", "t2d")) for k in f.keys())  # noqa: SIM118
    return "error" if errors else "clean"


def score(verdicts: list[tuple[str, str, set[str], str, set[str]]]) -> dict:
    right = sum(v == ev and er <= r for _, ev, er, v, r in verdicts)
    false_alarms = sum(ev == "clean" and v != "clean" for _, ev, _, v, _ in verdicts)
    misses = sum(ev != "clean" and (v == "clean" or not er <= r) for _, ev, er, v, r in verdicts)
    return {"right": right, "total": len(verdicts), "false_alarms": false_alarms, "misses": misses}


def run(verbose: bool = False) -> tuple[dict, dict]:
    ours, naive = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i, (kind, variant, template, verdict, rules) in enumerate(CASES):
            draft, _, command = materialize(root, f"draft{i}", variant, template)
            r = check_serve(draft, command)
            found = {f.rule for f in r.findings}
            ours.append((kind, verdict, rules, r.verdict, found))
            naive.append((kind, verdict, rules, naive_verdict(draft, command), rules))
            if verbose or r.verdict != verdict or not rules <= found:
                mark = "ok " if r.verdict == verdict and rules <= found else "BAD"
                print(f"{mark} {kind:42s} expected {verdict:7s} {sorted(rules)}  got {r.verdict:7s} {sorted(found)}")
    return score(ours), score(naive)


def main() -> None:
    ours, naive = run("--verbose" in sys.argv)
    for name, s in (("check serve", ours), ("naive (exact spellings, Llama rule)", naive)):
        print(f"{name:38s} right {s['right']}/{s['total']}  false alarms {s['false_alarms']}  misses {s['misses']}")


if __name__ == "__main__":
    main()
