"""`Stage[C]` / `AsyncStage[C]`: the unit of work every stage (ingest, dedup, mix, regenerate, build, capture,
train) is written as.

A stage declares what it is and what it does; the base owns everything around that:

    class BuildStage(Stage[BuildConfig]):
        name = "build"
        config_model = BuildConfig
        resume_key = "conversation_id"    # column of this stage's shards naming a finished input row
        shard_prefix = "rows"             # its shards: rows-00000.parquet, ...
        recomputed = frozenset({"rows_per_shard"})  # fields that may change between resumed runs

        def inputs(self): return [upstream_folder]  # its manifest.json is read and forwarded
        def rows(self): ...
        def process(self, rows, run): ...  # returns the stage's own manifest fields

The base's `run()` (`await run()` for an `AsyncStage`, whose `process` is a coroutine): the output
folder (`rank<k>/` under torchrun, a hidden staging folder swapped into place for `staged` stages), the
compatibility check against what an earlier run left there, the ids already written (`self.done`), the
`StageRun` (counts, quarantine, config.json, stats.json, the `stage_runs` row, `ZeroOutput`), and
`manifest.json`: {stage, run_id, config, counts, outputs, upstream: the manifests it consumed, forwarded}.
"""

from __future__ import annotations

import json
import shutil
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from catalog.errors import DraftsetError, StageFailed
from catalog.io import write_json_atomic
from catalog.shards import existing_ids, shard_paths
from pipeline.stage.config import StageConfig
from pipeline.stage.folders import (
    CONFIG,
    MANIFEST,
    rank_dir,
    read_manifest,
    recorded_compat,
    swap_into_place,
    torchrun_rank,
)
from pipeline.stage.run import StageRun

C = TypeVar("C", bound=StageConfig)


@dataclass
class StageResult:
    run_id: str
    out_dir: Path
    counts: dict[str, int]
    manifest: dict[str, Any]
    reused: bool = False  # a staged stage found the same output already complete and rebuilt nothing
    upstream: list[dict[str, Any]] = field(default_factory=list)


class StageCore(ABC, Generic[C]):
    """Everything around a stage's work; `Stage` (a function) and `AsyncStage` (a coroutine) add the work."""

    name: ClassVar[str]
    config_model: ClassVar[type[StageConfig]]
    resume_key: ClassVar[str | None] = None  # None: the stage recomputes everything (no resume by id)
    shard_prefix: ClassVar[str] = "part"
    compatible_on: ClassVar[tuple[str, ...] | None] = None  # None: every config field but `recomputed`
    recomputed: ClassVar[frozenset[str]] = frozenset()
    fresh_flag: ClassVar[str] = "--fresh"
    staged: ClassVar[bool] = False  # written in a hidden folder and renamed into place: all or nothing

    result: StageResult  # set when a run ends well
    stage_run: StageRun  # the run in progress

    def __init__(
        self, config: C, out_dir: Path, catalog: Any | None = None, *, fresh: bool = False, rank_folder: bool = True
    ):
        """`rank_folder=False`: `out_dir` is used as given (a stage that places its torchrun ranks itself)."""
        if not isinstance(config, self.config_model):
            raise TypeError(f"{type(self).__name__} takes a {self.config_model.__name__}, not {type(config).__name__}")
        self.config = config
        self.out_dir = rank_dir(Path(out_dir), *torchrun_rank()) if rank_folder else Path(out_dir)
        self.work_dir = self.out_dir  # where this run writes (a staging folder for staged stages)
        self.catalog = catalog
        self.fresh = fresh
        self.done: set[str] = set()
        self.upstream: list[dict[str, Any]] = []
        self.fields: dict[str, Any] = {}  # what `process` returned: the stage's own manifest fields

    # -- what each stage declares ---------------------------------------------------------------------
    def inputs(self) -> list[Path]:
        """The upstream folders this stage reads; their manifests are forwarded in this one's."""
        return []

    def rows(self) -> Iterable[Any]:
        return ()

    def prepare(self) -> None:
        """Work before this stage's own run starts (e.g. a sub-stage it runs first); may add to `self.upstream`."""

    def outputs(self) -> list[str]:
        return [p.name for p in shard_paths(self.work_dir, self.shard_prefix)]

    def has_output(self) -> bool:
        return bool(shard_paths(self.out_dir, self.shard_prefix))

    def upstream_manifest(self, folder: Path) -> dict[str, Any] | None:
        return read_manifest(folder)

    # -- compatibility ---------------------------------------------------------------------------------
    def compat_key(self) -> dict[str, Any]:
        """The values an existing output must have been made with for this run to resume it."""
        current = self.config.model_dump(mode="json")
        keys = (
            self.compatible_on if self.compatible_on is not None else [k for k in current if k not in self.recomputed]
        )
        return {k: current[k] for k in keys}

    def previous_keys(self) -> list[tuple[Path, dict[str, Any]]]:
        """(folder, settings) of output already there: config.json (written when a run starts, so a killed
        run's rows are covered too; its `compat` when the stage recorded one), else the manifest's config."""
        if not self.has_output():
            return []
        before: dict[str, Any] | None = None
        if (self.out_dir / CONFIG).is_file():
            before = recorded_compat(self.out_dir / CONFIG)
        elif (manifest := read_manifest(self.out_dir)) is not None:
            before = manifest.get("config")
        return [(self.out_dir, before or {})]

    def incompatible(self, folder: Path, changed: list[tuple[str, Any, Any]]) -> DraftsetError:
        keys = ", ".join(k for k, _, _ in changed)
        values = "; ".join(f"{k}: {_short(old)} -> {_short(new)}" for k, old, new in changed)
        return DraftsetError(
            f"{folder} holds {self.name} output made with different settings ({keys}): {values}; "
            "resuming would mix incompatible rows",
            hint=f"re-run with {self.fresh_flag} to rebuild from scratch, or resume with the earlier settings",
        )

    def check_compatible(self) -> bool:
        """Raise when existing output was made with other settings; True when there is output to resume."""
        current = self.compat_key()
        found = False
        for folder, before in self.previous_keys():
            found = True
            changed = [(k, before.get(k), v) for k, v in current.items() if before.get(k) != v]
            if changed:
                raise self.incompatible(folder, changed)
        return found

    def clear(self) -> None:
        """`fresh`: remove what an earlier run left (no ignore_errors: old files left would mix with new)."""
        if self.out_dir.exists():
            shutil.rmtree(self.out_dir)

    def already_done(self) -> set[str]:
        if self.resume_key is None:
            return set()
        return existing_ids(self.out_dir, prefix=self.shard_prefix, column=self.resume_key)

    # -- staged stages: the whole output or none ----------------------------------------------------------
    def reuse(self, run: StageRun, manifest: dict[str, Any]) -> None:
        """Count a re-run that found the identical output complete (staged stages only)."""
        n = int(manifest.get("counts", {}).get("out", 0))
        run.seen(n)
        run.skipped("already_built", n)

    # -- the run ----------------------------------------------------------------------------------------
    @contextmanager
    def running(self) -> Iterator[StageRun]:
        """Everything around the work: set `self.fields` inside; the manifest is written when the block ends
        well. (A staged stage's reuse of identical complete output happens in `Stage.run()`.)"""
        if self.staged:
            self.work_dir = self.out_dir.parent / f".{self.out_dir.name}.building-{uuid.uuid4().hex[:8]}"
        else:
            if self.fresh:
                self.clear()
            self.done = self.already_done()
            self.check_compatible()
        try:
            self.upstream = [m for m in (self.upstream_manifest(p) for p in self.inputs()) if m is not None]
            self.prepare()
            with StageRun(self.name, self.config, self.work_dir, self.catalog, compat=self.compat_key()) as run:
                self.stage_run = run
                try:
                    yield run
                except OSError as exc:  # full disk or permissions: say where, keep the counts
                    raise StageFailed(
                        f"cannot write under {self.work_dir}: {exc}",
                        stage=self.name,
                        run_id=run.run_id,
                        counts=run.counts,
                        hint="free disk space or fix permissions, then re-run (resumes by id)",
                    ) from exc
            manifest = self._write_manifest(run)
            if self.staged:
                swap_into_place(self.work_dir, self.out_dir)
                self.work_dir = self.out_dir
        finally:
            if self.staged and self.work_dir != self.out_dir:
                shutil.rmtree(self.work_dir, ignore_errors=True)
        self.result = StageResult(run.run_id, self.out_dir, dict(run.counts), manifest, upstream=self.upstream)

    def _write_manifest(self, run: StageRun) -> dict[str, Any]:
        manifest = {
            **self.fields,
            "stage": self.name,
            "run_id": run.run_id,
            "config": self.config.model_dump(mode="json"),
            "counts": dict(run.counts),
            "outputs": self.outputs(),
            "upstream": self.upstream,
        }
        write_json_atomic(self.work_dir / MANIFEST, manifest)
        return manifest

    def _reuse_if_complete(self) -> StageResult | None:
        """A staged stage whose identical output is complete: record a run of skipped rows, rebuild nothing.
        Different settings need `fresh` (the old output stays until the new one replaces it)."""
        manifest = read_manifest(self.out_dir)
        if manifest is None or not self.has_output():
            return None
        if not self.is_same_output(manifest):
            if not self.fresh:
                self.check_compatible()  # raises, naming what changed
                raise self.incompatible(self.out_dir, [])
            return None
        with StageRun(self.name, self.config, self.out_dir / "reruns", self.catalog) as run:
            self.reuse(run, manifest)
        return StageResult(run.run_id, self.out_dir, dict(run.counts), manifest, reused=True)

    def is_same_output(self, manifest: dict[str, Any]) -> bool:
        before = manifest.get("config") or {}
        return all(before.get(k) == v for k, v in self.compat_key().items())


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Stage(StageCore[C]):
    """A stage whose work is one call: `stage.run()`."""

    @abstractmethod
    def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        """Do the work, counting on `run`; skip ids in `self.done`; return the stage's manifest fields."""

    def run(self) -> StageResult:
        if self.staged and (reused := self._reuse_if_complete()) is not None:
            return reused
        with self.running() as run:
            self.fields = self.process(self.rows(), run)
        return self.result


class AsyncStage(StageCore[C]):
    """A stage whose work is a coroutine (e.g. thousands of requests in flight): `await stage.run()`.

    `session()` holds what the work needs open around the whole run (connections), entered before the output
    folder is checked, so a setting it resolves (e.g. the served model's name) is part of the recorded config."""

    @abstractmethod
    async def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        """Do the work, counting on `run`; skip ids in `self.done`; return the stage's manifest fields."""

    def session(self) -> AbstractAsyncContextManager[Any]:
        return nullcontext()

    async def run(self) -> StageResult:
        if self.staged:
            raise TypeError(f"{type(self).__name__}: an async stage appends by id; staging is for Stage")
        async with self.session():
            with self.running() as run:
                self.fields = await self.process(self.rows(), run)
        return self.result
