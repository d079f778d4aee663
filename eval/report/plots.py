"""The report's PNG plots (matplotlib, Agg backend: no display needed, safe in CI and over SSH)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen before pyplot loads)

from catalog.io import atomic_path  # noqa: E402
from eval.report.data import DEDUP_REASONS, ReportData, percentile  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_REASON_COLORS = {
    "kept": "#2e7d32",
    "exact": "#c62828",
    "near": "#ef6c00",
    "too_long": "#6a1b9a",
    "too_short": "#757575",
}


def _bar_height(n: int) -> float:
    # Horizontal bars: the figure grows with the number of labels so long repo ids stay readable.
    return max(2.6, 0.38 * n + 1.4)


def _barh(ax: Axes, labels: list[str], values: list[float], color: str = "#1565c0") -> None:
    bars = ax.barh(labels, values, color=color)
    ax.invert_yaxis()
    ax.bar_label(bars, labels=[f"{v:,g}" for v in values], padding=3, fontsize=8)
    ax.margins(x=0.15)
    ax.tick_params(axis="y", labelsize=8)


def plot_counts(data: ReportData, out: Path) -> list[Path]:
    paths = []
    for title, counts, fname in (
        ("Records per source", data.by_source, "counts_by_source.png"),
        ("Records per category", data.by_category, "counts_by_category.png"),
        ("Records per mode", data.by_mode, "counts_by_mode.png"),
    ):
        items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        fig, ax = plt.subplots(figsize=(9, _bar_height(len(items))))
        _barh(ax, [k for k, _ in items], [v for _, v in items])
        ax.set_title(f"{title} — mix {data.name} ({data.n_rows:,} records)")
        ax.set_xlabel("records")
        paths.append(_save(fig, out / fname))
    return paths


def plot_targets(data: ReportData, out: Path) -> list[Path]:
    """Target against selected, per category and per source: where the mix missed what it aimed for."""
    figures = data.figures
    paths = []
    for title, pairs, fname in (
        ("per category", figures.by_category(), "target_vs_selected_by_category.png"),
        ("per source", {s.source: (s.target, s.selected) for s in figures.sources}, "target_vs_selected_by_source.png"),
    ):
        labels = list(pairs)
        fig, ax = plt.subplots(figsize=(9, _bar_height(2 * len(labels))))
        ys = range(len(labels))
        for offset, values, color, name in (
            (-0.2, [t for t, _ in pairs.values()], "#9e9e9e", "target"),
            (0.2, [n for _, n in pairs.values()], "#1565c0", "selected"),
        ):
            bars = ax.barh([y + offset for y in ys], values, height=0.4, color=color, label=name)
            ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=3, fontsize=8)
        ax.set_yticks(list(ys), labels)
        ax.invert_yaxis()
        ax.margins(x=0.15)
        ax.tick_params(axis="y", labelsize=8)
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title(f"Target vs selected {title} — mix {data.name} ({figures.summary()})", fontsize=9, wrap=True)
        ax.set_xlabel("records")
        paths.append(_save(fig, out / fname))
    return paths


def plot_lengths(data: ReportData, out: Path) -> list[Path]:
    paths = []
    unit = "tokens" if not data.length_unit.startswith("estimate") else "tokens (estimate: chars/4)"
    regen = data.by_mode.get("regenerate", 0)
    answered = (
        f"Response length ({len(data.response_tokens):,} kept answers; {regen:,} prompts to regenerate"
        + (f", {data.no_response - regen:,} without an answer" if data.no_response != regen else "")
        + ")"
    )
    for title, values, fname, color in (
        ("Prompt length", data.prompt_tokens, "prompt_tokens.png", "#1565c0"),
        (answered, data.response_tokens, "response_tokens.png", "#2e7d32"),
    ):
        fig, ax = plt.subplots(figsize=(9, 4))
        if values:
            ax.hist(values, bins=min(40, max(5, len(set(values)))), color=color, edgecolor="white")
            med = percentile(values, 0.5)
            ax.axvline(float(med), color="black", linestyle="--", linewidth=1, label=f"median {med}")
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no records", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(f"{title} — mix {data.name}")
        ax.set_xlabel(unit)
        ax.set_ylabel("records")
        paths.append(_save(fig, out / fname))
    return paths


def plot_dedup_yield(data: ReportData, out: Path) -> list[Path]:
    repos = sorted(set(data.dedup) | set(data.ingest))
    fig, (ax1, ax2) = plt.subplots(
        1, 2, figsize=(13, _bar_height(len(repos))), sharey=True, gridspec_kw={"width_ratios": [3, 2]}
    )
    left = [0] * len(repos)
    for reason in DEDUP_REASONS:
        vals = [data.dedup[r][reason] for r in repos]
        if any(vals):
            ax1.barh(repos, vals, left=left, color=_REASON_COLORS[reason], label=reason)
            left = [a + b for a, b in zip(left, vals)]
    ax1.invert_yaxis()
    ax1.set_title("Dedup and length filter per source")
    ax1.set_xlabel("ingested records")
    ax1.legend(loc="lower right", fontsize=8)
    ax1.tick_params(axis="y", labelsize=8)
    yields = [data.yield_of(r) for r in repos]
    bars = ax2.barh(repos, [y or 0 for y in yields], color="#00838f")
    ax2.bar_label(bars, labels=["n/a" if y is None else f"{y:.2f}" for y in yields], padding=3, fontsize=8)
    ax2.axvline(1.0, color="black", linewidth=0.8, linestyle=":")
    ax2.set_title("Ingest yield (records per raw row)")
    ax2.margins(x=0.2)
    return [_save(fig, out / "dedup_yield_by_source.png")]


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return path
