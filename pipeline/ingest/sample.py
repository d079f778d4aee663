"""Which raw rows of a source ingest maps: the plan's quota x an oversampling factor, chosen by row hash.

A row is in the sample when its key, a seeded 64-bit hash of (repo, config, split, row index) scaled to
[0, 1), is below the rate `target / available`. The sample is exactly that set of rows, whatever order
they come in (a dataset sorted by topic or length gives no bias, a re-ordered mirror the same rows), and
the same on every run and machine. Rows outside it are read by the stream but never parsed, mapped or
written (`skipped_not_sampled`): that is where ingest spent its time (bench_ingest). Stopping the stream
at the target would make the set depend on row order, so a row-hash sample reads to the end.

Topping up: a later, larger target raises the rate. Every row below the old rate was taken by the
earlier, completed run (its records are in, or its reject is in the quarantine), so those rows are
skipped before parsing (`skipped_already_ingested`), and only the band [old rate, new rate) is mapped.

A re-run after reading everything (--all, or a rate of 1) maps the rows again and skips the records
already written by id (`skipped_already_written`), as a resumed run does.

When the catalog does not know how many rows a source has, there is no rate: the stream stops at the
target (the first rows are taken, `"kind": "first_rows"` in the manifest says so) and the rows after it
are never read (`not_read`, when the count becomes known).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import xxhash

from catalog import Catalog


def sample_key(seed: int, repo_id: str, config: str, split: str, row_index: int) -> float:
    """The row's place in the seeded order, in [0, 1): xxh64, the same in every process and run."""
    return xxhash.xxh64_intdigest(f"{repo_id}|{config}|{split}|{row_index}".encode(), seed=seed) / 2**64


@dataclass(frozen=True)
class RowSample:
    target: int | None  # raw rows to take; None: every row (--all)
    available: int | None  # rows the source has (catalog), None when unknown
    seed: int = 0
    previous_rate: float = 0.0  # what a completed earlier run took already
    previous_taken: int = 0

    @property
    def rate(self) -> float:
        if self.target is None or not self.available:
            return 1.0
        return min(1.0, self.target / self.available)

    @property
    def kind(self) -> str:
        if self.target is None:
            return "all"
        return "row_hash" if self.available else "first_rows"

    def done(self, taken: int) -> bool:
        """True once a first-rows sample reached its target: the stream may stop."""
        return self.kind == "first_rows" and self.target is not None and self.previous_taken + taken >= self.target


def for_source(
    rows_to_take: int | None, n_rows: int | None, oversample: float, seed: int, previous: dict[str, Any] | None
) -> RowSample:
    """The sample of one source: `rows_to_take` (the plan's, None for --all) x `oversample`, above what a
    completed earlier run (`previous`: its manifest's `sample` entry) already took at the same seed."""
    target = None if rows_to_take is None else max(1, math.ceil(rows_to_take * oversample))
    prev_rate, prev_taken = 0.0, 0
    if previous and previous.get("seed") == seed and previous.get("kind") == "row_hash":
        prev_rate, prev_taken = float(previous.get("rate", 0.0)), int(previous.get("taken", 0))
    return RowSample(target, n_rows, seed, prev_rate, prev_taken)


def plan_quotas(catalog: Catalog, plan_id: str) -> dict[str, tuple[int | None, int | None]]:
    """repo → (rows the plan takes from it, rows the catalog says it has)."""
    rows = catalog.query(
        "SELECT p.repo_id, p.rows_to_take, c.n_rows FROM plan_items p LEFT JOIN candidates c USING (repo_id) "
        "WHERE p.plan_id = ?",
        [plan_id],
    )
    return {r["repo_id"]: (r["rows_to_take"], r["n_rows"]) for r in rows}
