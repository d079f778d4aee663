"""Background jobs of the service: find runs (the LangGraph graph), adapter contract tests, ingest and every
stage after it (stages.py).

Each job runs on one of a few daemon worker threads (find has an event loop of its own there), records
its progress events in memory for the SSE stream and the job page, and its status and result in the
catalog's `service_jobs` table, so `GET /api/jobs/{id}` still answers after a restart. A job that was
running when the service stopped is marked `interrupted` (at shutdown, or at the next start after a
kill -9) with the line that says how to resume it: a find job's record carries its run id from the
moment it is queued, and `draftset find --resume RUN_ID` continues from its last checkpoint; a stage job
(ingest, mix, ... report) is queued again with its own params by POST /api/jobs/{id}/resume. Daemon
threads, not a ThreadPoolExecutor: the interpreter joins an executor's threads at exit, so a running
find kept a stopped service alive until it finished.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from catalog.db import Catalog, first_line
from catalog.errors import DraftsetError

if TYPE_CHECKING:
    from adapters.review.propose import Outcome
    from agents.run import FindEnv, FindRequest

STOPPED = "the service stopped while this job ran"
RESUME = "; resume it: "
MAX_EVENTS = 2000  # per job, for late SSE subscribers; a find run on the fixture Hub emits ~150


@dataclass
class Job:
    job_id: str
    kind: str
    params: dict[str, Any]
    started_by: str
    status: str = "queued"
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # a stage job's stage runs: live counts by run id
    events: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: str | None = None
    hint: str | None = None
    started_at: datetime = field(default_factory=datetime.now)
    finished_at: datetime | None = None
    emit: Callable[[dict[str, Any]], None] = field(default=lambda event: None, repr=False)

    @property
    def done(self) -> bool:
        return self.status in ("ok", "failed", "interrupted")

    def view(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "kind": self.kind,
            "params": self.params,
            "status": self.status,
            "started_by": self.started_by,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "agents": self.agents,
            "runs": self.runs,
            "result": self.result,
            "error": self.error,
            "next": self.hint,
        }


def resume_hint(job_id: str, kind: str, params: dict[str, Any]) -> str | None:
    """How to resume an unfinished job: a find by its run id from the CLI; any other job by queueing it again
    (its stage skips what is done). None for the jobs that are simply started again (a contract test)."""
    if kind == "find":
        return f"draftset find --resume {params['run_id']}" if params.get("run_id") else None
    if kind in ("adapter_test", "adapter_propose"):
        return None
    return f"POST /api/jobs/{job_id}/resume (the job page's Resume button)"


def _row(job: Job) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "kind": job.kind,
        "params": job.params,
        "status": job.status,
        "started_by": job.started_by,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "error": job.error,
        "result": job.result,
    }


class Jobs:
    """The service's job runner: at most `workers` jobs at once, the rest queue."""

    def __init__(self, catalog: Catalog, workers: int = 2):
        self.catalog = catalog
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Job, Callable[[Job], dict[str, Any]]] | None] = queue.Queue()
        self._closing = False
        self._threads = [
            threading.Thread(target=self._worker, name=f"service-job-{i}", daemon=True) for i in range(workers)
        ]
        left = catalog.query("SELECT job_id, kind, params FROM service_jobs WHERE status IN ('queued', 'running')")
        with catalog.writer() as con:  # jobs of a previous service process can no longer be running
            for row in left:
                hint = resume_hint(row["job_id"], row["kind"], _params(row["params"]))
                con.execute(
                    "UPDATE service_jobs SET status = 'interrupted', finished_at = ?, error = coalesce(error, ?) "
                    "WHERE job_id = ?",
                    [datetime.now(), STOPPED + (RESUME + hint if hint else ""), row["job_id"]],
                )
        for thread in self._threads:
            thread.start()

    def submit(self, kind: str, params: dict[str, Any], user: str, work: Callable[[Job], dict[str, Any]]) -> Job:
        job = Job(f"{kind}-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}", kind, params, user)
        job.emit = lambda event: self.event(job, event)
        with self._lock:
            self.jobs[job.job_id] = job
        self._save(job)
        self._queue.put((job, work))
        return job

    def _worker(self) -> None:
        while (item := self._queue.get()) is not None:
            if not self._closing:
                self._run(*item)

    def get(self, job_id: str) -> Job | dict[str, Any] | None:
        """A live job, else the stored row of a past one (as a plain dict), else None."""
        if job_id in self.jobs:
            return self.jobs[job_id]
        rows = self.catalog.query("SELECT * FROM service_jobs WHERE job_id = ?", [job_id])
        return rows[0] if rows else None

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        return self.catalog.query(
            "SELECT job_id, kind, status, started_by, started_at, finished_at, error "
            "FROM service_jobs ORDER BY started_at DESC LIMIT ?",
            [limit],
        )

    def event(self, job: Job, event: dict[str, Any]) -> None:
        """Record one progress event (called from the job's thread)."""
        if "category" in event:
            row = job.agents.setdefault(event["category"], {})
            row.update({k: v for k, v in event.items() if k != "category" and not isinstance(v, (dict, list))})
        if "run_id" in event and isinstance(event.get("counts"), dict):  # a stage run's live counts
            job.runs[event["run_id"]] = {k: event[k] for k in ("stage", "status", "counts") if k in event}
        if len(job.events) < MAX_EVENTS:
            job.events.append(event)

    def _run(self, job: Job, work: Callable[[Job], dict[str, Any]]) -> None:
        job.status = "running"
        self._save(job)
        try:
            job.result = work(job)
            job.status = "ok"
        except DraftsetError as exc:
            job.status, job.error, job.hint = "failed", str(exc), exc.hint
        except Exception as exc:  # a bug: the job fails with its first line, the service keeps running
            job.status, job.error = "failed", f"{type(exc).__name__}: {first_line(exc)}"
        job.finished_at = datetime.now()
        self.event(job, {"stage": "job", "status": job.status, "error": job.error})
        try:
            self._save(job)
        except DraftsetError:
            pass  # the in-memory job still answers; the row says running until the next start

    def _save(self, job: Job) -> None:
        self.catalog.upsert("service_jobs", [_row(job)])

    def shutdown(self) -> None:
        """Stop taking work; every job not done is recorded `interrupted` with how to resume it. Running
        threads are daemons: they die with the process (a find resumes from its last checkpoint)."""
        self._closing = True
        for _ in self._threads:
            self._queue.put(None)
        for job in list(self.jobs.values()):
            if not job.done:
                hint = resume_hint(job.job_id, job.kind, job.params)
                job.status, job.finished_at = "interrupted", datetime.now()
                job.error = STOPPED + (RESUME + hint if hint else "")
                job.hint = hint
                try:
                    self._save(job)
                except DraftsetError:
                    pass


def _params(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value or {})


# -- the work itself --------------------------------------------------------------------------------
def find_work(
    env: FindEnv,
    request: FindRequest,
    propose: int,
    propose_one: Callable[[str], Outcome],
    run_id: str,
    catalog: Catalog,
) -> Callable[[Job], dict[str, Any]]:
    """A find run (`run_id`, named in the job's params from the start) through the LangGraph graph, then
    adapters proposed for the plan's top `propose` items: the same phase as a local find (agents/proposals.py:
    the same targets, by score, each outcome committed as it ends, so `find --resume` proposes only the rest)."""

    def work(job: Job) -> dict[str, Any]:
        from adapters.review.propose import Outcome
        from agents import proposals
        from agents.planning import headline
        from agents.run import stream_find

        async def drive() -> dict[str, Any]:
            final: dict[str, Any] = {}
            async for event in stream_find(env, request, run_id=run_id):
                if event.get("stage") == "finished":
                    final = event
                else:
                    job.emit(event)
            return final

        state = asyncio.run(drive())["state"]
        plan, summary = state["plan"], state["summary"]
        totals = plan["totals"]
        outcomes: dict[str, Outcome] = {}

        def propose_todo(todo: list[str], on_outcome: Callable[[Outcome], None]) -> None:
            for repo_id in todo:
                job.emit({"stage": "propose", "repo_id": repo_id})
                try:
                    outcome = propose_one(repo_id)
                except DraftsetError as exc:  # recorded as `failed`, as adapters.review.propose.propose_many does
                    outcome = Outcome(repo_id, error=str(exc))
                outcomes[repo_id] = outcome
                on_outcome(outcome)

        phase = proposals.run(catalog, run_id, plan["plan_id"], propose, propose_todo)
        proposed = [t for t in phase.targets if phase.done.get(t) in ("pass", "fail")]
        failed = [
            {"repo_id": t, "error": outcomes[t].line() if t in outcomes else phase.done.get(t, "not done")}
            for t in phase.targets
            if phase.done.get(t) not in ("pass", "fail")
        ]
        return {
            "run_id": run_id,
            "plan_id": plan["plan_id"],
            "domain": state["domain"],
            "headline": headline(totals),
            "regen_hours": totals["regen_hours"],
            "hidden_state_tb": totals["hidden_state_bytes"] / 1e12,
            "samples_planned": totals.get("samples_planned"),
            "datasets": len(plan["items"]),
            "agents_ok": summary["agents_ok"],
            "agents_failed": summary["agents_failed"],
            "adapters_proposed": proposed,
            "adapters_failed": failed,
            # What `draftset find` prints locally, so it prints the same through the service (the plan table).
            "plan": plan,
            "summary": summary,
        }

    return work


def wait(job: Job, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not job.done and time.monotonic() < deadline:
        time.sleep(0.05)
    return job.done
