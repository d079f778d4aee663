"""`draftset ingest`: approved datasets → canonical parquet shards under data/normalized/<owner>__<name>/.

Per dataset: the gate (`require_approved`) refuses an unapproved or stale adapter; raw rows stream
from the Hub at the adapter's pinned revision through `apply_row`; every rejected row goes to the
quarantine with its row index, field and reason; ids already in the shards are skipped (resume by
id, never by line count). One dataset failing is recorded and reported, the others carry on. Records
failing a per-record check are quarantined; past the spec's max_bad_fraction the dataset fails, its shards
kept but held back from mix (tolerance.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from adapters.map.apply import RowError, apply_row
from adapters.prove.plausibility import record_problems
from adapters.read.source import RawRow, iter_raw_rows
from adapters.review.gate import require_approved
from adapters.spec import AdapterSpec
from catalog import Catalog
from catalog.errors import DraftsetError, StageFailed
from catalog.home import Home
from catalog.hub import HubClient, hub_errors
from catalog.liveness import run_lock
from catalog.shards import ParquetShardWriter, existing_ids
from catalog.untrusted import shell_word
from pipeline.ingest.config import IngestConfig
from pipeline.ingest.sample import RowSample, for_source, sample_key
from pipeline.ingest.tolerance import enforce
from pipeline.rows.codec import to_row
from pipeline.stage import Stage, StageRun, field_default, read_manifest


@dataclass
class DatasetResult:
    repo_id: str
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    hint: str | None = None


def hub_revision(repo_id: str, endpoint: str, token: str | None) -> str:
    """The dataset's current revision on the Hub: the gate compares it with the approved one."""
    return HubClient(endpoint, token).revision(repo_id)  # missing repo, gated, dead endpoint: one clear error


class IngestStage(Stage[IngestConfig]):
    """One dataset: resumes by record id; shards from another adapter spec or revision are never mixed in."""

    name = "ingest"
    config_model = IngestConfig
    resume_key = "id"
    # the records' hash, not the spec's: raising max_bad_fraction (a person's approval) resumes the same records
    compatible_on = ("records_hash", "revision")

    def __init__(
        self,
        config: IngestConfig,
        out_dir: Path,
        catalog: Catalog,
        *,
        spec: AdapterSpec,
        endpoint: str,
        token: str | None,
        fresh: bool,
        progress: Progress | None,
        rows_to_take: int | None = None,
        n_rows: int | None = None,
    ):
        super().__init__(config, out_dir, catalog, fresh=fresh)
        self.spec, self.endpoint, self.token, self.progress = spec, endpoint, token, progress
        self.rows_to_take, self.n_rows = rows_to_take, n_rows

    def previous_keys(self) -> list[tuple[Path, dict[str, Any]]]:
        return [(folder, self._with_records_hash(before)) for folder, before in super().previous_keys()]

    def _with_records_hash(self, before: dict[str, Any]) -> dict[str, Any]:
        """Output from before records_hash existed recorded only the spec's hash: the same spec made the same
        records, and any other spec hashed as its records at the default thresholds."""
        if "records_hash" in before:
            return before
        same = before.get("spec_hash") == self.config.spec_hash
        return {**before, "records_hash": self.config.records_hash if same else before.get("spec_hash")}

    def incompatible(self, folder: Path, changed: list[tuple[str, Any, Any]]) -> DraftsetError:
        old = {k: before for k, before, _ in changed}
        config = self.config
        old_records, old_revision = old.get("records_hash", config.records_hash), old.get("revision", config.revision)
        return DraftsetError(
            # records hashes on both sides (the resume key), never a records hash labelled as the spec's
            f"{folder} holds shards from adapter spec records {str(old_records)[:12]} at revision "
            f"{str(old_revision)[:12]}, but the approved adapter (spec {config.spec_hash[:12]}) writes records "
            f"{config.records_hash[:12]} at revision {config.revision[:12]}",
            hint=f"rebuild them: draftset ingest --repo {shell_word(config.repo_id)} --fresh",
        )

    def rows(self) -> Iterable[RawRow]:
        return iter_raw_rows(self.spec, endpoint=self.endpoint, token=self.token)

    def process(self, rows: Iterable[RawRow], run: StageRun) -> dict[str, Any]:
        config = self.config
        before = None if self.fresh else read_manifest(self.out_dir)
        sample = for_source(
            self.rows_to_take, self.n_rows, config.oversample, config.sample_seed, (before or {}).get("sample")
        )
        # hub_errors: the Hub failing mid-stream becomes a DraftsetError naming the dataset, not a traceback.
        with hub_errors(self.endpoint, repo_id=config.repo_id, probe=False):
            taken = ingest_rows(
                self.spec,
                rows,
                self.work_dir,
                run,
                max_conversation_chars=config.max_conversation_chars,
                progress=self.progress,
                done=self.done,
                sample=sample,
            )
        # the writer has closed: the shards stay (resumable by id) whether or not the dataset passes
        enforce(self.spec, run.counts, taken, self.work_dir, run.run_id)
        return {
            "sample": {
                "kind": sample.kind,
                "seed": sample.seed,
                "rate": max(sample.rate, sample.previous_rate),
                "target": sample.target,
                "available": sample.available,
                "taken": sample.previous_taken + taken,
            }
        }


def ingest_dataset(
    catalog: Catalog,
    home: Path,
    repo_id: str,
    *,
    endpoint: str,
    token: str | None = None,
    fresh: bool = False,
    max_conversation_chars: int = field_default(IngestConfig, "max_conversation_chars"),
    progress: Progress | None = None,
    rows_to_take: int | None = None,
    n_rows: int | None = None,
    oversample: float = field_default(IngestConfig, "oversample"),
    sample_seed: int = field_default(IngestConfig, "sample_seed"),
) -> DatasetResult:
    """Ingest one dataset: `rows_to_take` rows (x the oversampling factor, by row hash) or all of them (None)."""
    spec = require_approved(catalog, repo_id, hub_revision(repo_id, endpoint, token))
    config = IngestConfig.for_spec(spec, max_conversation_chars=max_conversation_chars)
    config = config.model_copy(update={"oversample": oversample, "sample_seed": sample_seed})
    out = Home(home).normalized(repo_id)
    # One ingest per dataset at a time (an flock: released by the kernel if this process dies). Taken
    # before --fresh removes the folder, so a second ingest cannot delete the first one's shards.
    with run_lock(out.parent / f".{out.name}.lock", f"ingest of {repo_id}"):
        stage = IngestStage(
            config,
            out,
            catalog,
            spec=spec,
            endpoint=endpoint,
            token=token,
            fresh=fresh,
            progress=progress,
            rows_to_take=rows_to_take,
            n_rows=n_rows,
        )
        result = stage.run()
    # No write to find's candidates table: the ok stage_runs row is ingest's record, and the catalog view
    # candidate_status derives "ingested" from it for find's and plan's views.
    return DatasetResult(repo_id, result.counts)


def ingest_rows(
    spec: AdapterSpec,
    raw_rows: Iterable[RawRow],
    out: Path,
    run: StageRun,
    *,
    max_conversation_chars: int = field_default(IngestConfig, "max_conversation_chars"),
    progress: Progress | None = None,
    done: set[str] | None = None,
    sample: RowSample | None = None,
) -> int:
    """Raw rows → canonical shard rows in `out`, skipping ids already there; every reject quarantined.

    With a `sample`, rows outside it are counted and skipped before parsing, and the stream stops once its
    target is taken. Returns the raw rows taken (mapped) by this call."""
    src = spec.source
    done = existing_ids(out) if done is None else done
    task = progress.add_task(src.repo_id, total=None) if progress else None
    sample = sample or RowSample(None, None)
    rate, previous_rate, seed = sample.rate, sample.previous_rate, sample.seed
    hashed = sample.kind == "row_hash" or previous_rate > 0
    taken = 0
    with ParquetShardWriter(out) as writer:
        for raw in raw_rows:
            if sample.done(taken):
                break  # a first-rows sample: the rest of the stream is never read
            run.seen()
            if progress and task is not None:
                progress.advance(task)
            if hashed:
                key = sample_key(seed, src.repo_id, src.config, src.split, raw.row_index)
                if key < previous_rate:
                    run.skipped("already_ingested")
                    continue
                if key >= rate:
                    run.skipped("not_sampled")
                    continue
            taken += 1
            where = {
                "repo_id": src.repo_id,
                "revision": src.revision,
                "config": src.config,
                "split": src.split,
                "row_index": raw.row_index,
            }
            if raw.error is not None:
                run.drop(
                    reader_reason(raw.error),
                    where={**where, **file_position(raw.error), "field": "<row>"},
                    detail=raw.error,
                )
                continue
            try:
                conversations = apply_row(spec, raw.row_index, raw.row)
                # the contract's per-record checks, on every record: a few implausible ones are quarantined
                # here by name (the contract tolerated them within the spec's max_bad_fraction), never trained
                flagged = [p for conv in conversations for p in record_problems(conv)[0]]
                if flagged:
                    run.drop(f"check_{flagged[0][0]}", where={**where, "field": "<record>"}, detail=flagged[0][1])
                    continue
                rows = [to_row(conv) for conv in conversations]
            except RowError as exc:
                run.drop("row_error", where={**where, "field": exc.field}, detail=exc.reason)
                continue
            except Exception as exc:  # noqa: BLE001 - whatever a library raises on one row loses that row only
                run.drop(
                    "unexpected_error",
                    where={**where, "field": "<row>"},
                    detail=f"{type(exc).__name__}: {str(exc)[:300]}",
                )
                continue
            for conv, row in zip(conversations, rows):
                if conv.id in done:
                    run.skipped("already_written")
                    continue
                if len(row["conversation"]) > max_conversation_chars:
                    run.drop(
                        "too_large",
                        where={**where, "field": "<conversation>", "record_id": conv.id},
                        detail=f"{len(row['conversation'])} chars > {max_conversation_chars}",
                    )
                    continue
                writer.write(row)
                done.add(conv.id)
                run.emitted()
    return taken


# Reader problems whose reason is just "the row is not what JSON/CSV promised" keep the historical
# `malformed`; a broken limit or a broken file keeps its own name (too_deep, huge_int, invalid_utf8, ...).
_MALFORMED = {"malformed", "invalid_json", "not_an_object"}


def reader_reason(problem: str) -> str:
    reason = getattr(problem, "reason", "malformed")
    return "malformed" if reason in _MALFORMED else reason


def file_position(problem: str) -> dict[str, Any]:
    """The true file and line of a reader problem, for the quarantine entry."""
    return {k: getattr(problem, k) for k in ("file", "line") if getattr(problem, k, None) is not None}


def repos_to_ingest(catalog: Catalog, plan_id: str | None, repos: list[str] | None) -> list[str]:
    """--repo wins; else the plan's datasets; else every approved adapter."""
    if repos:
        return list(dict.fromkeys(repos))
    if not catalog.path.exists():
        raise DraftsetError("no catalog yet: nothing is approved", hint='run `draftset find "<domain>"` first')
    if plan_id:
        if not catalog.query("SELECT 1 FROM plans WHERE plan_id = ?", [plan_id]):
            raise DraftsetError(
                f"plan {plan_id!r} not found", hint='list plans: draftset sql "SELECT plan_id, domain FROM plans"'
            )
        rows = catalog.query("SELECT repo_id FROM plan_items WHERE plan_id = ? ORDER BY repo_id", [plan_id])
    else:
        rows = catalog.query("SELECT repo_id FROM adapters WHERE status = 'approved' ORDER BY repo_id")
    if not rows:
        raise DraftsetError(
            "no dataset to ingest" + (f" in plan {plan_id}" if plan_id else ": no approved adapter"),
            hint="approve adapters with `draftset adapters approve REPO`",
        )
    return [r["repo_id"] for r in rows]


def ingest_one(
    catalog: Catalog,
    home: Path,
    job: tuple[str, int | None, int | None],
    settings: dict[str, Any],
    progress: Progress | None = None,
) -> DatasetResult:
    """One dataset's ingest as a result: a failure is named in it, never raised."""
    repo_id, rows_to_take, n_rows = job
    try:
        return ingest_dataset(
            catalog, home, repo_id, progress=progress, rows_to_take=rows_to_take, n_rows=n_rows, **settings
        )
    except StageFailed as exc:  # the run's counts still add up: in = out + dropped by reason (+ skipped)
        return DatasetResult(repo_id, dict(exc.counts), str(exc), exc.hint)
    except DraftsetError as exc:
        return DatasetResult(repo_id, {}, str(exc), exc.hint)
    except OSError as exc:  # full disk or permissions while writing quarantine/stats files
        return DatasetResult(
            repo_id,
            {},
            f"cannot write under {Home(home).normalized(repo_id)}: {exc}",
            "free disk space or fix permissions, then re-run (resumes by id)",
        )
