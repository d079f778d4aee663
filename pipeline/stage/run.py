"""One run of one stage and its accounting: counts, quarantine, config.json/stats.json, the run record.

    with StageRun("ingest", config, out_dir, catalog) as run:
        for row in rows:
            run.seen()
            ...
            run.drop("null_content", where={"repo_id": r, "row_index": i, "field": "messages[2].content"})
            run.emitted()

On exit the run writes `config.json` and `stats.json` beside the outputs, records a `stage_runs`
row (when a catalog is given: the GPU capture/train hosts run without one), and raises `ZeroOutput`
when it saw input but emitted nothing. `Stage` (stage/base.py) opens one around each stage's work.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from catalog.errors import DraftsetError, ZeroOutput
from catalog.io import write_json_atomic
from catalog.liveness import mark_interrupted, owner
from pipeline.stage.config import StageConfig

_REASON = re.compile(r"^[a-z][a-z0-9_]*$")

# Who is told of each run that opens in this context (a service job shows its stage's live counts): set by
# `watch_runs`, read by `StageRun.__enter__`. A context variable, so a job on one thread sees only its own runs.
_WATCHERS: ContextVar[tuple[Callable[[StageRun], None], ...]] = ContextVar("stage_run_watchers", default=())


@contextmanager
def watch_runs(on_open: Callable[[StageRun], None]) -> Iterator[None]:
    """Call `on_open(run)` for every StageRun opened inside this block (in this thread or task); the caller
    may then read `run.counts` (the stage's own accounting) while the run goes on."""
    token = _WATCHERS.set((*_WATCHERS.get(), on_open))
    try:
        yield
    finally:
        _WATCHERS.reset(token)


def _check_reason(reason: str) -> str:
    # Reasons become count keys (`dropped_<reason>`) that people query in SQL: keep them plain.
    if not _REASON.match(reason):
        raise ValueError(f"stage reason {reason!r} must be snake_case (a-z, 0-9, _)")
    return reason


def skipped_total(counts: Mapping[str, int]) -> int:
    """Rows an earlier run already produced (all `skipped_<reason>` counts): they count as output."""
    return sum(v for k, v in counts.items() if k.startswith("skipped_"))


class StageRun:
    """Counts and bookkeeping for one run of one stage."""

    def __init__(
        self,
        stage: str,
        config: StageConfig,
        out_dir: Path,
        catalog: Any | None = None,
        run_id: str | None = None,
        *,
        compat: Mapping[str, Any] | None = None,
    ):
        self.stage = stage
        self.config = config
        self.compat = compat  # what a later run must match to resume this output: recorded in config.json
        self.out_dir = Path(out_dir)
        self.catalog = catalog
        self.run_id = run_id or f"{stage}-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
        self.counts: Counter[str] = Counter({"in": 0, "out": 0, "errors": 0})
        self.started_at = datetime.now()
        self._t0 = time.monotonic()
        self.quarantine_path = self.out_dir / "quarantine.jsonl"
        self._quarantine: TextIO | None = None
        self._quarantined: set[str] = set()  # rows already in quarantine.jsonl (this run or an earlier one)

    # -- counting ----------------------------------------------------------------------------
    def seen(self, n: int = 1) -> None:
        self.counts["in"] += n

    def emitted(self, n: int = 1) -> None:
        self.counts["out"] += n

    def skipped(self, reason: str, n: int = 1) -> None:
        """Work already done by an earlier run (resume); counted, not quarantined."""
        self.counts[f"skipped_{_check_reason(reason)}"] += n

    def tally(self, key: str, n: int = 1) -> None:
        """An informational count (e.g. rows a mix did not select): neither output nor a drop."""
        self.counts[_check_reason(key)] += n

    def drop(self, reason: str, where: dict[str, Any] | None = None, detail: str | None = None) -> None:
        """Reject one row: counted as dropped_<reason> and written to quarantine.jsonl.

        `where` should locate the row precisely (dataset, row_index, field) so it can be re-read.
        """
        self.counts[f"dropped_{_check_reason(reason)}"] += 1
        if self._quarantine is None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._quarantined = _quarantine_keys(self.quarantine_path)
            self._quarantine = self.quarantine_path.open("a", encoding="utf-8")
            if self.quarantine_path.stat().st_size and not _ends_with_newline(self.quarantine_path):
                self._quarantine.write("\n")  # a run killed mid-line: never glue the next entry to it
        entry = {"run_id": self.run_id, "reason": reason, "detail": detail, **(where or {})}
        key = _entry_key(entry)
        if key in self._quarantined:  # a resumed run meets the same bad row again: counted, not re-written
            return
        self._quarantined.add(key)
        self._quarantine.write(json.dumps(entry, default=str, ensure_ascii=False) + "\n")
        self._quarantine.flush()  # a crash later in the run must not lose the reasons already found

    def error(self, n: int = 1) -> None:
        self.counts["errors"] += n

    @property
    def dropped(self) -> int:
        return sum(v for k, v in self.counts.items() if k.startswith("dropped_"))

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> StageRun:
        if self.catalog is not None:
            mark_interrupted(self.catalog)  # earlier runs whose process died stop showing as running
        self.out_dir.mkdir(parents=True, exist_ok=True)
        recorded: dict[str, Any] = {"stage": self.stage, **self.config.model_dump(mode="json")}
        if self.compat is not None:
            recorded["compat"] = dict(self.compat)
        write_json_atomic(self.out_dir / "config.json", recorded)
        self._record("running", None, finished=False)
        for on_open in _WATCHERS.get():
            on_open(self)
        return self

    def live_counts(self) -> dict[str, int]:
        """A copy of the counts, safe to take from another thread while the stage counts."""
        for _ in range(5):
            try:
                return dict(self.counts)
            except RuntimeError:  # the stage added a key during the copy: take it again
                continue
        return {}

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._quarantine is not None:
            self._quarantine.close()
            self._quarantine = None
        self._quarantined = set()
        error = None if exc is None else f"{type(exc).__name__}: {exc}"
        # Ctrl-C (KeyboardInterrupt, or the cancellation asyncio.run turns it into): stopped, not failed; what
        # the stage wrote is kept and a re-run resumes it
        stopped = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        if stopped:
            error = "interrupted (Ctrl-C); what was written is kept: run it again to resume"
        # Rows skipped because an earlier run already wrote them count as produced (resume).
        produced = self.counts["out"] + skipped_total(self.counts)
        if exc is None and self.counts["in"] > 0 and produced == 0:
            error = (
                f"{self.stage}: {self.counts['in']} rows in, 0 out "
                f"({self._drop_summary() or 'nothing dropped'}); quarantine: {self.quarantine_path}"
            )
            exc = ZeroOutput(
                error,
                stage=self.stage,
                run_id=self.run_id,
                counts=self.counts,
                hint=f"read {self.quarantine_path} for the reason of each rejected row",
            )
        write_json_atomic(
            self.out_dir / "stats.json",
            {
                "run_id": self.run_id,
                "stage": self.stage,
                "counts": dict(self.counts),
                "error": error,
                "started_at": self.started_at,
                "elapsed_s": round(time.monotonic() - self._t0, 3),
            },
        )
        self._record("ok" if error is None else "interrupted" if stopped else "failed", error, finished=True)
        if isinstance(exc, ZeroOutput) and exc_type is None:
            raise exc

    def _drop_summary(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items()) if k.startswith("dropped_") and v)

    def _record(self, status: str, error: str | None, finished: bool) -> None:
        if self.catalog is None:
            return
        self.catalog.upsert(
            "stage_runs",
            [
                {
                    "run_id": self.run_id,
                    "stage": self.stage,
                    "params": self.config.model_dump(mode="json"),
                    "counts": dict(self.counts),
                    "status": status,
                    "error": error,
                    "started_at": self.started_at,
                    "finished_at": datetime.now() if finished else None,
                    "owner": owner(),
                }
            ],
        )

    def summary(self) -> str:
        parts = [f"in={self.counts['in']}", f"out={self.counts['out']}"]
        parts += [f"{k}={v}" for k, v in sorted(self.counts.items()) if k not in ("in", "out") and v]
        return f"{self.stage}: " + " ".join(parts)


def _entry_key(entry: Mapping[str, Any]) -> str:
    """A quarantine entry's identity: the row and the reason, not the run or the wording."""
    return json.dumps({k: v for k, v in entry.items() if k not in ("run_id", "detail")}, sort_keys=True, default=str)


def _quarantine_keys(path: Path) -> set[str]:
    keys: set[str] = set()
    if not path.is_file():
        return keys
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                keys.add(_entry_key(json.loads(line)))
            except (ValueError, AttributeError):  # a line cut by a kill: its row is written again
                continue
    return keys


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def require(condition: bool, message: str, hint: str | None = None) -> None:
    """Raise a user-facing error (one line, no traceback) when `condition` is false."""
    if not condition:
        raise DraftsetError(message, hint=hint)
