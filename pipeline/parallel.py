"""Run a data stage's tasks on N local workers or on a cluster, through datatrove's executors.

One task function `fn(rank, world) -> counts` is the stage code everywhere: datatrove's
`LocalPipelineExecutor` runs it in a process pool here, `RayPipelineExecutor` on a Ray cluster and
`SlurmPipelineExecutor` as a Slurm array, unchanged (README: why datatrove's executors and not Ray Data).
Around it this module keeps draftset's rules:

- resume per task: datatrove writes `completions/<rank>` after a task ends well and skips those ranks on
  the next run; the task's counts are written (atomically) *before* that marker, so a completed rank always
  has its counts and a re-run adds them up without redoing the work;
- exact accounting: `run_tasks` returns every rank's counts (re-read from disk, whichever process or
  node produced them) and refuses to return when one is missing;
- a failing task fails the run with its own error (datatrove re-raises it), never a partial silent sum.

Tasks must be deterministic functions of (rank, world): which inputs a rank owns is decided by the rank
alone (`owned`), so a resumed or re-scheduled rank does exactly the same work.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from catalog.errors import DraftsetError
from catalog.io import write_json_atomic

Executor = Literal["local", "ray", "slurm"]
T = TypeVar("T")
COUNTS = "counts"


def owned(items: Sequence[T], rank: int, world: int) -> list[T]:
    """The items rank `rank` of `world` works on: every world-th one, so shares differ by one at most."""
    return list(items[rank::world])


class _Task:
    """The datatrove pipeline step: `(data, rank, world_size)` → runs `fn`, records its counts."""

    def __init__(self, fn: Callable[[int, int], dict[str, int]], logging_dir: Path):
        self.fn, self.logging_dir = fn, logging_dir

    def __call__(self, data: Any, rank: int = 0, world_size: int = 1) -> None:
        _quiet()
        counts = self.fn(rank, world_size)
        write_json_atomic(self.logging_dir / COUNTS / f"{rank:05d}.json", dict(counts))

    def __repr__(self) -> str:  # datatrove logs the pipeline by its steps' reprs
        return f"draftset task {getattr(self.fn, '__name__', type(self.fn).__name__)}"


def _quiet() -> None:
    # datatrove logs every task's start, pipeline and stats at INFO on stderr; draftset's commands print
    # their own summary, so only datatrove's errors (which it also raises) stay.
    from loguru import logger

    logger.disable("datatrove")


def run_tasks(
    fn: Callable[[int, int], dict[str, int]],
    tasks: int,
    logging_dir: Path,
    *,
    workers: int = 1,
    executor: Executor = "local",
    options: dict[str, Any] | None = None,
) -> list[dict[str, int]]:
    """Run `fn(rank, tasks)` for every rank not yet completed; return the counts of all `tasks` ranks.

    `options` go to the cluster executor as they are (Slurm: partition, time, ...; Ray: cpus_per_task, ...).
    """
    logging_dir = Path(logging_dir)
    logging_dir.mkdir(parents=True, exist_ok=True)
    pipeline = [_Task(fn, logging_dir)]
    _quiet()
    runner: Any
    if executor == "local":
        from datatrove.executor import LocalPipelineExecutor

        runner = LocalPipelineExecutor(
            pipeline,
            tasks=tasks,
            workers=max(1, min(workers, tasks)),
            logging_dir=str(logging_dir),
            start_method=_start_method(),
            **(options or {}),
        )
    elif executor == "ray":
        import ray
        from datatrove.executor.ray import RayPipelineExecutor

        if not ray.is_initialized():
            ray.init()  # joins the cluster RAY_ADDRESS names (`ray start --head` there), else starts a local one

        runner = RayPipelineExecutor(
            pipeline, tasks=tasks, workers=workers, logging_dir=str(logging_dir), **(options or {})
        )
    elif executor == "slurm":
        from datatrove.executor.slurm import SlurmPipelineExecutor

        runner = SlurmPipelineExecutor(pipeline, tasks=tasks, logging_dir=str(logging_dir), **(options or {}))
    else:
        raise DraftsetError(f"unknown executor {executor!r}", hint="use one of: local, ray, slurm")
    runner.run()
    return task_counts(logging_dir, tasks)


def _start_method() -> str:
    """fork, not datatrove's forkserver default, in a process of one thread (the CLI): workers inherit the imported
    stage code, no re-import per worker. In a process with threads (the service runs stages in job threads beside
    uvicorn's) a fork can copy a lock another thread holds, and the child hangs on it: seen as a dedup that never
    ended, its child spinning on OpenSSL's lock inside os.fork. There every process comes from a forkserver,
    datatrove's own Manager too (it takes multiprocess's default context, so that is set once, process-wide)."""
    if threading.active_count() == 1:
        return "fork"
    import multiprocess

    if multiprocess.get_start_method(allow_none=True) != "forkserver":
        multiprocess.set_start_method("forkserver", force=True)
    return "forkserver"


def task_counts(logging_dir: Path, tasks: int) -> list[dict[str, int]]:
    """Every rank's recorded counts; a rank without them (its task failed or never ran) is an error."""
    out: list[dict[str, int]] = []
    missing: list[int] = []
    for rank in range(tasks):
        path = Path(logging_dir) / COUNTS / f"{rank:05d}.json"
        if not path.is_file():
            missing.append(rank)
            continue
        out.append(json.loads(path.read_text()))
    if missing:
        raise DraftsetError(
            f"{len(missing)} of {tasks} tasks left no counts under {logging_dir} (first: rank {missing[0]})",
            hint="re-run the same command: completed tasks are skipped, the rest run again",
        )
    return out


def summed(counts: list[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return dict(total)
