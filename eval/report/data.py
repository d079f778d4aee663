"""Everything a dataset report shows, gathered from a mix folder, its dedup decisions and the
per-source ingest stats (no catalog writes; the report is a read-only view)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.shards import iter_rows
from pipeline.mix.figures import MixFigures, mix_figures
from pipeline.rows.codec import from_row
from pipeline.stage import skipped_total
from pipeline.targets.lengths import TokenCounter

DEDUP_REASONS = ("kept", "exact", "near", "too_long", "too_short")


@dataclass
class ReportData:
    name: str
    manifest: dict[str, Any]
    length_unit: str
    length_note: str | None = None  # what the tokenizer file carried that counting turned off (issue 16)
    dedup_config: dict[str, Any] = field(default_factory=dict)  # the mix's length limits and how it measured
    by_source: Counter = field(default_factory=Counter)
    by_category: Counter = field(default_factory=Counter)
    by_mode: Counter = field(default_factory=Counter)
    prompt_tokens: list[int] = field(default_factory=list)
    response_tokens: list[int] = field(default_factory=list)  # records that carry an answer only
    no_response: int = 0  # records out of the response histogram: regenerate prompts, and rows with no answer
    dedup: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # repo -> reason -> n
    ingest: dict[str, dict[str, int]] = field(default_factory=dict)  # repo -> counts
    ingest_sample: dict[str, dict[str, Any]] = field(default_factory=dict)  # repo -> what ingest read (sample.py)
    dup_scope: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # repo -> within/across

    @property
    def figures(self) -> MixFigures:
        """Quota, target, selected, short and received, reconciled (pipeline/mix/figures.py)."""
        return mix_figures(self.manifest)

    @property
    def n_rows(self) -> int:
        return sum(self.by_source.values())

    def limit_hits(self) -> dict[str, int]:
        """Rows the mix's length filter dropped: too_long and too_short, over every source."""
        return {r: sum(c.get(r, 0) for c in self.dedup.values()) for r in ("too_long", "too_short")}

    def yield_of(self, repo: str) -> float | None:
        """Records per raw row at ingest (None when the ingest stats are missing)."""
        counts = self.ingest.get(repo) or {}
        rows_in = counts.get("in", 0)
        produced = counts.get("out", 0) + skipped_total(counts)
        return produced / rows_in if rows_in else None

    def scale_table(self) -> tuple[str, list[str], list[list[object]]]:
        """Per source: rows it has, rows ingest read and mapped, what it left unread or unsampled, and the
        duplicates dedup removed from it, of a row of the same source (within) or of another (across)."""
        header = ["source", "available", "read", "mapped", "not sampled", "unread", "sample", "dups within"]
        rows: list[list[object]] = []
        for repo in sorted(set(self.ingest) | set(self.dup_scope)):
            counts, sample = self.ingest.get(repo, {}), self.ingest_sample.get(repo, {})
            scope: Counter = self.dup_scope.get(repo, Counter())
            available, read = sample.get("available"), counts.get("in", 0)
            kind = sample.get("kind", "all")
            rows.append(
                [
                    repo,
                    "?" if available is None else available,
                    read,
                    sample.get("taken", read),
                    counts.get("skipped_not_sampled", 0),
                    "?" if available is None else max(0, available - read),
                    kind if kind != "row_hash" else f"row hash, rate {sample.get('rate', 1):.3g}",
                    scope["within"],
                    scope["across"],
                ]
            )
        return ("Scale: what was read, and duplicates by scope", [*header, "dups across"], rows)


def percentile(values: list[int], q: float) -> int | str:
    """Nearest-rank percentile of measured lengths ("-" when there are none)."""
    if not values:
        return "-"
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load_report_data(home: Path, name: str, tokenizer: Path | None = None, batch: int = 1_024) -> ReportData:
    folder = Home(home).mix(name)
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        raise DraftsetError(
            f"no mix named {name!r} ({manifest_path} missing)", hint=f"build it first: draftset mix {name}"
        )
    counter = TokenCounter.resolve(tokenizer, home)
    data = ReportData(name, json.loads(manifest_path.read_text()), counter.method, counter.note)
    dedup_config = folder / "dedup" / "config.json"
    if dedup_config.is_file():
        data.dedup_config = json.loads(dedup_config.read_text())
    pending: list[tuple[str, str]] = []

    def measure() -> None:
        data.prompt_tokens += counter.count_many([p for p, _ in pending])
        answered = [r for _, r in pending if r]
        data.response_tokens += counter.count_many(answered)
        data.no_response += len(pending) - len(answered)
        pending.clear()

    for row in iter_rows([folder]):
        data.by_source[row["repo_id"]] += 1
        data.by_category[row["category"]] += 1
        data.by_mode[row["mode"]] += 1
        conv = from_row(row)
        # A regenerate row's answer (if the dataset had one) is replaced by the target's: it is not a length
        # the draft trains on, so it stays out of the response histogram and counts as a prompt to regenerate.
        pending.append((conv.context_text(), "" if row["mode"] == "regenerate" else conv.response_text()))
        if len(pending) >= batch:
            measure()
    measure()
    counted = {f.source: f.selected for f in data.figures.sources if f.selected}
    if counted != dict(data.by_source):  # the manifest's figures must be the rows on disk
        raise DraftsetError(
            f"mix {name!r}: its manifest says {counted} records per source, its shards hold {dict(data.by_source)}",
            hint=f"rebuild it: draftset mix {name} --overwrite",
        )
    decisions = folder / "dedup" / "decisions.parquet"
    if decisions.is_file():
        table = pq.read_table(decisions, columns=["record_id", "repo_id", "reason", "duplicate_of"])
        for rec in table.select(["repo_id", "reason"]).to_pylist():
            data.dedup[rec["repo_id"]][rec["reason"]] += 1
        _dup_scope(data, table)
    for repo in data.manifest.get("sources", {}):
        stats = Home(home).normalized(repo) / "stats.json"
        if stats.is_file():
            data.ingest[repo] = json.loads(stats.read_text()).get("counts", {})
        manifest = Home(home).normalized(repo) / "manifest.json"
        if manifest.is_file():
            data.ingest_sample[repo] = json.loads(manifest.read_text()).get("sample") or {}
    return data


def _dup_scope(data: ReportData, decisions: pa.Table) -> None:
    """Exact and near duplicates by whether the row they duplicate is of the same source."""
    survivors = decisions.select(["record_id", "repo_id"]).rename_columns(["duplicate_of", "of_repo"])
    dups = decisions.filter(pc.field("duplicate_of").is_valid()).join(survivors, "duplicate_of")
    for rec in dups.select(["repo_id", "of_repo"]).to_pylist():
        data.dup_scope[rec["repo_id"]]["within" if rec["repo_id"] == rec["of_repo"] else "across"] += 1
