"""The mix's figures as a user reads them, each against its reference, and reconciled.

A plan's quotas are scaled to N (the target); a source that cannot give its target after dedup is short,
and what it lacks is passed on to the sources with rows to spare (they receive it). The only figure that
can then be missed is what nobody could take up (unmet). Printed alone, "quota 40 · selected 0 ·
shortfall 6" reads as nonsense: the shortfall is against the scaled target, not the quota. Every view
(mix's CLI summary, the report's tables and plots) takes its numbers from here, and `reconcile` raises
when they do not add up, so a wrong figure can never be printed quietly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog.errors import DraftsetError


@dataclass(frozen=True)
class SourceFigures:
    source: str
    category: str
    quota: int | None  # the plan's quota (None without a plan)
    target: int  # the quota scaled to N (without a plan: N split by category weight)
    selected: int
    short: int  # target - selected when it could not give its target: passed on to the others
    received: int  # selected - target when it took up what others were short of


@dataclass(frozen=True)
class MixFigures:
    quota_total: int | None
    target: int  # N: what the mix aims for, the targets' sum
    selected: int
    passed_on: int  # sum of the sources' short
    taken_up: int  # sum of the sources' received
    unmet: int  # target - selected: what nobody could take up
    sources: tuple[SourceFigures, ...]

    def summary(self) -> str:
        """One line where each figure names its reference, e.g. "plan quotas 46 → target 40 · selected 40
        of 40 · 6 short at 2 sources, passed on: 6 taken up by others, 0 unmet"."""
        head = (
            f"plan quotas {self.quota_total:,} scaled to target {self.target:,}"
            if self.quota_total is not None and self.quota_total != self.target
            else f"target {self.target:,}" + (" (the plan's quotas)" if self.quota_total is not None else "")
        )
        text = f"{head} · selected {self.selected:,} of {self.target:,}"
        n_short = sum(1 for s in self.sources if s.short)
        if self.passed_on:
            text += (
                f" · {self.passed_on:,} short at {n_short:,} source(s), passed on: {self.taken_up:,} taken up by "
                f"others, {self.unmet:,} unmet"
            )
        elif self.unmet:
            text += f" · {self.unmet:,} unmet"
        return text

    def by_category(self) -> dict[str, tuple[int, int]]:
        """category -> (target, selected)."""
        out: dict[str, tuple[int, int]] = {}
        for s in self.sources:
            t, n = out.get(s.category, (0, 0))
            out[s.category] = (t + s.target, n + s.selected)
        return dict(sorted(out.items()))


def mix_figures(manifest: dict[str, Any]) -> MixFigures:
    """The reconciled figures of a mix manifest (pipeline/mix/run.py writes it)."""
    sources = tuple(
        SourceFigures(
            source=repo,
            category=str(v.get("category") or ""),
            quota=v.get("quota"),
            target=int(v.get("target", 0)),
            selected=int(v.get("selected", 0)),
            short=max(0, int(v.get("target", 0)) - int(v.get("selected", 0))),
            received=max(0, int(v.get("selected", 0)) - int(v.get("target", 0))),
        )
        for repo, v in sorted(manifest.get("sources", {}).items())
    )
    quotas = [s.quota for s in sources if s.quota is not None]
    target = int(manifest.get("samples_target", sum(s.target for s in sources)))
    selected = int(manifest.get("samples_selected", sum(s.selected for s in sources)))
    figures = MixFigures(
        quota_total=sum(quotas) if manifest.get("plan_id") else None,
        target=target,
        selected=selected,
        passed_on=sum(s.short for s in sources),
        taken_up=sum(s.received for s in sources),
        unmet=target - selected,
        sources=sources,
    )
    reconcile(figures)
    return figures


def reconcile(f: MixFigures) -> None:
    """Raise unless every printed figure adds up: with a plan the targets sum to N; the sources' selections
    sum to the mix's; and selected = the sources' targets - passed on + taken up."""
    problems = []
    source_targets = sum(s.target for s in f.sources)
    # With a plan the scaled quotas sum to N exactly; by category weight, a source's target is capped at its
    # rows, so the targets may sum to less (the gap is unmet: no source holds those rows).
    if f.quota_total is not None and source_targets != f.target:
        problems.append(f"source targets sum to {source_targets:,}, not the target {f.target:,}")
    if sum(s.selected for s in f.sources) != f.selected:
        problems.append(f"sources selected {sum(s.selected for s in f.sources):,}, the mix {f.selected:,}")
    if source_targets - f.passed_on + f.taken_up != f.selected:
        problems.append(
            f"targets {source_targets:,} - passed on {f.passed_on:,} + taken up {f.taken_up:,} "
            f"!= selected {f.selected:,}"
        )
    if f.unmet < 0:
        problems.append(f"selected {f.selected:,} is over the target {f.target:,}")
    if problems:
        raise DraftsetError("mix figures do not reconcile: " + "; ".join(problems), hint="rebuild it: --overwrite")
