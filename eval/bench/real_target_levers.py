"""The recipe levers of a GPU run, side by side: held-out draft accuracy per TTT step, with intervals.

    python -m eval.bench.real_target_levers [--record eval/bench/real_target_levers.json] [--plot levers.png]

Reads a record of eval/bench/real_target_stages (its `train` metrics: each run's held-out accuracy at every TTT
step, on the same held-out rows) and prints one markdown row per run: acc@k with a 95% Wilson interval and the
change at acc@0 and acc@last against the record's `base` run (`lever-base` unless it names another; each lever
changes one setting of it), and, where `check draft` ran, its replayed accept length on the same held-out prompts;
where `check accept-length` decoded the drafts, their accept length at each depth with the paired difference
against the base over the same prompts. The intervals count
tokens as independent; tokens of one row are not, so with 64 held-out rows they are too narrow: read a
difference as real only when it is several times their half-width.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from eval.specdecode.replay import Difference, paired_difference

RECORD = Path(__file__).with_name("real_target_levers.json")
BASE = "lever-base"
Z = 1.96


def wilson(p: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion `p` over `n` trials."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def lever_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per trained run: its steps, tokens seen, held-out accuracy per step and the change against base."""
    runs = record["stages"].get("train") or {}
    n = int(record["heldout_tokens"])
    base_name = record.get("base", BASE)
    base = (runs.get(base_name) or {}).get("heldout_step_accuracy")
    rows = []
    for name, metrics in runs.items():
        acc = metrics.get("heldout_step_accuracy")
        if not acc:
            continue
        row = {
            "run": name,
            "steps": metrics["steps"],
            "tokens": metrics["rank0_tokens"],
            "acc": acc,
            "interval": [wilson(p, n) for p in acc],
        }
        replay = replayed(record, name)
        if replay:
            row["replay"] = replay
        paired = paired_replay(record, name, base_name)
        if paired is not None:
            row["paired"] = paired
        if measured := decoded(record, name):
            row["decoded"] = measured
            base_rows = decoded(record, base_name) if name != base_name else {}
            row["decoded_paired"] = {
                depth: diff
                for depth, r in measured.items()
                if depth in base_rows
                and (diff := paired_difference(r["rounds_per_prompt"], base_rows[depth]["rounds_per_prompt"]))
            }
        if base and name != base_name:
            row["vs_base_first"] = acc[0] - base[0]
            row["vs_base_last"] = acc[min(len(acc), len(base)) - 1] - base[min(len(acc), len(base)) - 1]
        rows.append(row)
    return rows


def replayed(record: dict[str, Any], name: str) -> tuple[float, float, float] | None:
    """`check draft`'s replayed accept length of run `name` on the held-out prompts (value, low, high), if it ran."""
    check = (record["stages"].get("check") or {}).get(name)
    if not check:
        return None
    row = check["tables"][0]["rows"][0]  # the headline: the configured wiring on held-out rows
    interval = row["accept_length_interval"]
    return row["accept_length"], interval["low"], interval["high"]


def decoded(record: dict[str, Any], name: str) -> dict[int, dict[str, Any]]:
    """`check accept-length`'s configured rows of run `name` by speculative depth, from the measurement taken at the
    run's last trained step count (the driver keys the main run's under `measures`, the others' under
    `measures_by_run`, both by steps); {} where it was not decoded at that count."""
    stages = record["stages"]
    by_steps = stages.get("measures") if name == "main" else (stages.get("measures_by_run") or {}).get(name)
    steps = str(((stages.get("train") or {}).get(name) or {}).get("steps"))
    measure = (by_steps or {}).get(steps)
    if not measure:
        return {}
    rows = [r for t in measure["tables"] for r in t["rows"] if r.get("wiring") == "configured"]
    return {int(r["steps"]): r for r in rows}


def paired_replay(record: dict[str, Any], name: str, base_name: str) -> Difference | None:
    """Run minus base, replayed on the same held-out rows, bootstrapped over rows in pairs (records of check draft
    from 2026-12-04 on keep each row's rounds; older ones give None)."""
    if name == base_name:
        return None
    checks = record["stages"].get("check") or {}
    if name not in checks or base_name not in checks:
        return None
    a, b = (checks[n]["tables"][0]["rows"][0].get("rounds_per_prompt") for n in (name, base_name))
    return paired_difference(a, b) if a and b else None


def markdown(rows: list[dict[str, Any]], record: dict[str, Any]) -> str:
    depth = max(len(r["acc"]) for r in rows)
    replays = any("replay" in r for r in rows)
    head = ["run", "changes", "steps", "tokens seen", *(f"acc@{k}" for k in range(depth)), "Δ acc@0", "Δ acc@last"]
    paired = any("paired" in r for r in rows)
    head += ["replayed AL (check draft)"] if replays else []
    head += ["Δ replayed AL, paired over prompts"] if paired else []
    depths = sorted({d for r in rows for d in r.get("decoded", {})})
    head += [f"decoded AL @{d}" for d in depths] + [f"Δ decoded AL @{d}, paired" for d in depths if any(
        d in r.get("decoded_paired", {}) for r in rows)]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base_name = record.get("base", BASE)
    base_recipe = record["recipes"].get(base_name, {})
    for r in rows:
        recipe = record["recipes"].get(r["run"], {})
        # two runs bounded by max_steps differ in planned epochs only on paper
        moot = {"max_steps", *(["epochs"] if "max_steps" in recipe and "max_steps" in base_recipe else [])}
        changes = ", ".join(f"{k} {v}" for k, v in recipe.items() if base_recipe.get(k) != v and k not in moot)
        cells = [f"{p:.3f} [{lo:.3f}, {hi:.3f}]" for p, (lo, hi) in zip(r["acc"], r["interval"], strict=True)]
        cells += ["-"] * (depth - len(cells))
        delta = [f"{r[k]:+.3f}" if k in r else "-" for k in ("vs_base_first", "vs_base_last")]
        if replays:
            delta.append("{:.3f} [{:.3f}, {:.3f}]".format(*r["replay"]) if "replay" in r else "-")
        if paired:
            delta.append(str(r["paired"]) if "paired" in r else "-")
        for d in depths:
            al = r.get("decoded", {}).get(d, {}).get("accept_length_interval")
            delta.append("{value:.3f} [{low:.3f}, {high:.3f}]".format(**al) if al else "-")
        for d in depths:
            if any(d in x.get("decoded_paired", {}) for x in rows):
                delta.append(str(r["decoded_paired"][d]) if d in r.get("decoded_paired", {}) else "-")
        name = r["run"] if r["run"] != base_name else f"{base_name} (the reference)"
        lines.append(
            "| " + " | ".join([name, changes or "-", str(r["steps"]), f"{r['tokens']:,}", *cells, *delta]) + " |"
        )
    for name, why in (record.get("failed") or {}).items():
        lines.append(f"| {name} | not trained: {why} |" + " - |" * (len(head) - 2))
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path, title: str, base_name: str = BASE) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for r in rows:
        ks = list(range(len(r["acc"])))
        low = [p - lo for p, (lo, _) in zip(r["acc"], r["interval"], strict=True)]
        high = [hi - p for p, (_, hi) in zip(r["acc"], r["interval"], strict=True)]
        base = r["run"] == base_name  # the reference: thick and black
        label = f"{r['run']} ({r['steps']} steps)"
        ax.errorbar(ks, r["acc"], yerr=[low, high], marker="o", capsize=3, label=label,
                    linewidth=2.5 if base else 1.5, color="black" if base else None)  # fmt: skip
    ax.set_xlabel("TTT step (draft's own earlier proposals as input)")
    ax.set_ylabel("held-out token accuracy")
    ax.set_title(title)
    ax.set_xticks(range(max(len(r["acc"]) for r in rows)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--record", type=Path, default=RECORD)
    p.add_argument("--plot", type=Path, default=None, help="also draw the levers to this PNG")
    a = p.parse_args(argv)
    record = json.loads(a.record.read_text())
    rows = lever_rows(record)
    if not rows:
        raise SystemExit(f"{a.record}: no run with held-out accuracy in its `train` metrics")
    table = markdown(rows, record)
    print(table)
    if a.plot:
        answered = (record["stages"].get("regenerate") or {}).get("counts", {}).get("out")
        title = f"Recipe levers on the same {answered or '?':,} rows, {record['heldout_rows']} held out"
        plot(rows, a.plot, title, record.get("base", BASE))
        print(f"plot: {a.plot}")
    return table


if __name__ == "__main__":
    main()
