"""Plot a data-scaling curve: measured accept length per training-sample count, with the forecast's band.

    python -m eval.bench.bench_real_target_curve_plot [--curve real_target_curve.json] --out curve.png

Points come from bench_real_target_curve's JSON (configured wiring, each step count, with their bootstrap
intervals), or, without one, from the reference points agents/forecast.py carries (measured on an H200).
The band is the log-linear fit's 95% band (agents/forecast.py), dashed where it extrapolates.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from agents.forecast import REFERENCE, Point, Z, fit

GOAL = 2.6  # accept length at 3 steps on held-out prompts


def curve_points(path: Path) -> list[Point]:
    figures = json.loads(path.read_text())
    points = []
    for size in figures["sizes"].values():
        samples = size.get("train_rows")
        for r in (size.get("measure") or {}).get("runs", []):
            if r["wiring"] == "configured" and samples:
                low, high = r["interval"]
                points.append(Point(int(samples), r["al"], max((high - low) / (2 * Z), 1e-3), r["steps"]))
    return points


def plot(points: list[Point], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for steps, color in zip(sorted({p.steps for p in points}), ["tab:blue", "tab:orange", "tab:green"]):
        pts = [p for p in points if p.steps == steps]
        ax.errorbar(
            [p.samples for p in pts],
            [p.accept_length for p in pts],
            yerr=[Z * p.se for p in pts],
            fmt="o",
            color=color,
            capsize=3,
            label=f"measured, {steps} steps",
        )
        f = fit(points, steps)
        if f is None:
            continue
        xs = np.exp(np.linspace(math.log(f.lo / 2), math.log(f.hi * 8), 60))
        mean = np.array([f.predict(x)[0] for x in xs])
        half = np.array([f.predict(x)[1] for x in xs])
        inside = (xs >= f.lo) & (xs <= f.hi)
        ax.plot(xs[inside], mean[inside], "-", color=color)
        ax.plot(xs, mean, "--", color=color, alpha=0.6, label=f"log-linear fit, {steps} steps (dashed: extrapolated)")
        ax.fill_between(xs, mean - half, mean + half, color=color, alpha=0.15)
    ax.axhline(2.5, color="grey", lw=0.8, ls=":")
    ax.text(min(p.samples for p in points) / 2, 2.51, "field break-even ~2.5", fontsize=8)
    ax.axhline(GOAL, color="tab:red", lw=0.8, ls=":")
    ax.text(min(p.samples for p in points) / 2, GOAL + 0.01, f"goal of issue #25: {GOAL} at 3 steps", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("training samples (log)")
    ax.set_ylabel("accept length (tokens per target forward)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--curve", type=Path, help="real_target_curve.json (default: the reference points)")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    points = curve_points(a.curve) if a.curve else REFERENCE
    title = "SmolLM2-135M-Instruct, one H200: held-out accept length vs training samples"
    note = "\nagents/forecast.py's reference points (error bars: 95% bootstrap over rounds)"
    if a.curve:
        args = json.loads(a.curve.read_text())["args"]
        note = (
            f"\ntrain --online, {args['epochs']} epochs, lr {args['lr']}; {args['eval_prompts']} held-out prompts x "
            f"{args['eval_tokens']} tokens; bars: 95% bootstrap"
        )
    plot(points, a.out, title + note)
    print(f"wrote {a.out} from {len(points)} points")


if __name__ == "__main__":
    main()
