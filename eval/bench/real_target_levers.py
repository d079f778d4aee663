"""The recipe levers of a GPU run, side by side: held-out draft accuracy per TTT step, with intervals.

    python -m eval.bench.real_target_levers [--record eval/bench/real_target_levers.json] [--plot levers.png]

Reads a record of eval/bench/real_target_stages (its `train` metrics: each run's held-out accuracy at every TTT
step, on the same held-out rows) and prints one markdown row per run: acc@k with a 95% Wilson interval and the
change at acc@0 and acc@last against `lever-base` (each lever changes one setting of it). The intervals count
tokens as independent; tokens of one row are not, so with 64 held-out rows they are too narrow: read a
difference as real only when it is several times their half-width.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

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
    base = (runs.get(BASE) or {}).get("heldout_step_accuracy")
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
        if base and name != BASE:
            row["vs_base_first"] = acc[0] - base[0]
            row["vs_base_last"] = acc[min(len(acc), len(base)) - 1] - base[min(len(acc), len(base)) - 1]
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]], record: dict[str, Any]) -> str:
    depth = max(len(r["acc"]) for r in rows)
    head = ["run", "changes", "steps", "tokens seen", *(f"acc@{k}" for k in range(depth)), "Δ acc@0", "Δ acc@last"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base_recipe = record["recipes"].get(BASE, {})
    for r in rows:
        recipe = record["recipes"].get(r["run"], {})
        changes = ", ".join(f"{k} {v}" for k, v in recipe.items() if base_recipe.get(k) != v and k != "max_steps")
        cells = [f"{p:.3f} [{lo:.3f}, {hi:.3f}]" for p, (lo, hi) in zip(r["acc"], r["interval"], strict=True)]
        cells += ["-"] * (depth - len(cells))
        delta = [f"{r[k]:+.3f}" if k in r else "-" for k in ("vs_base_first", "vs_base_last")]
        name = r["run"] if r["run"] != BASE else f"{BASE} (the reference)"
        lines.append(
            "| " + " | ".join([name, changes or "-", str(r["steps"]), f"{r['tokens']:,}", *cells, *delta]) + " |"
        )
    for name, why in (record.get("failed") or {}).items():
        lines.append(f"| {name} | not trained: {why} |" + " - |" * (len(head) - 2))
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for r in rows:
        ks = list(range(len(r["acc"])))
        low = [p - lo for p, (lo, _) in zip(r["acc"], r["interval"], strict=True)]
        high = [hi - p for p, (_, hi) in zip(r["acc"], r["interval"], strict=True)]
        base = r["run"] == BASE  # the reference: thick and black
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
        plot(rows, a.plot, f"Recipe levers on the same {answered or '?':,} rows, {record['heldout_rows']} held out")
        print(f"plot: {a.plot}")
    return table


if __name__ == "__main__":
    main()
