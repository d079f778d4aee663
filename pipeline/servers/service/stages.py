"""Every stage after ingest as a job of the service, one way for all of them.

A stage job is declared once as data (`StageJob`): its kind, a strict request body (the names it acts on
and the stage's own settings), and `prepare`, which checks every name and setting against the service's
home *before* the job is queued (a typo is a 400, not a failed job later) and returns the work: the same
stage function the CLI runs, with the same typed config. `start` runs any of them the same way:

- progress is the stage's own accounting: each `StageRun` the work opens is watched (pipeline.stage's
  `watch_runs`) and its live counts (in, out, dropped_<reason>, skipped_...) are sent as events;
- roles: starting one needs the operator role (api.py), reading it the viewer role, as find and ingest;
- resumability: a stage re-run with the same settings skips what is done (by id), so an interrupted or
  failed job is resumed by queueing it again with its own params (`resume_body` adds what a stage needs
  to go on rather than start over, e.g. train's `resume`): POST /api/jobs/{id}/resume.

pipeline's stages are declared in stage_kinds.py; floors above pipeline (eval: check, report) add theirs
through the `draftset.commands` entry-point group: a module listed there may have `register_jobs(register)`.
"""

from __future__ import annotations

import threading
from importlib import import_module
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from catalog.errors import DraftsetError
from catalog.names import require_known
from pipeline.servers.service.jobs import Job
from pipeline.servers.service.stage_job import StageBody, StageJob, Work
from pipeline.stage import StageRun, watch_runs

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service

TICK_S = 0.5  # how often a running stage's counts are looked at (an event is sent only when they changed)


_KINDS: dict[str, StageJob] = {}
_discovered = False
COMMAND_GROUP = "draftset.commands"  # the group pipeline's CLI loads eval's commands from (pyproject.toml)


def register(job: StageJob) -> None:
    _KINDS[job.kind] = job


def kinds() -> dict[str, StageJob]:
    """Every stage job kind: pipeline's own, then those of the packages in the entry-point group."""
    global _discovered
    if not _discovered:
        from pipeline.servers.service import stage_kinds

        stage_kinds.register_all(register)
        for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
            hook = getattr(import_module(entry.module), "register_jobs", None)
            if hook is not None:
                hook(register)
        _discovered = True
    return _KINDS


def kind_of(kind: str) -> StageJob:
    found = kinds()
    return found[require_known("stage", kind, found, where="POST /api/stages/KIND", hint="GET /api/stages lists them")]


def parse(job: StageJob, raw: Any) -> StageBody:
    """The request body, strict; the first problem as one line naming the field."""
    try:
        return job.body.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise DraftsetError(
            f"{job.kind}: {where}: {first['msg']}", hint=f"GET /api/stages shows the fields {job.kind} takes"
        ) from None


_STARTING = threading.Lock()  # the busy check and the submit, together: two requests cannot both pass it


def start(service: Service, kind: str, raw: Any, user: str) -> Job:
    job = kind_of(kind)
    body = parse(job, raw)
    work = job.prepare(service, body)  # every name and setting checked now
    params = body.model_dump(mode="json")
    with _STARTING:
        busy(service, job, params)
        return service.jobs.submit(kind, params, user, watched(work))


def busy(service: Service, job: StageJob, params: dict[str, Any]) -> None:
    """Refuse a second job on what a queued or running one of this kind writes (the same mix, build, ...)."""
    for other in list(service.jobs.jobs.values()):
        if other.done or other.kind != job.kind:
            continue
        if job.target is None or other.params.get(job.target) == params.get(job.target):
            what = f" on {params.get(job.target)!r}" if job.target else ""
            raise DraftsetError(
                f"{job.kind} job {other.job_id} is already {other.status}{what}",
                hint=f"watch it at /jobs/{other.job_id}; start this one when it has ended",
            )


def resume(service: Service, job_id: str, user: str) -> Job:
    """Queue an interrupted or failed stage job (or a train that stopped at its step or time limit) again with
    its own params: the stage skips what is done."""
    found = service.jobs.get(job_id)
    if found is None:
        raise DraftsetError(f"no job {job_id!r}", hint="GET /api/jobs lists recent jobs")
    kind, status, params, result = (
        (found.kind, found.status, found.params, found.result or {})
        if isinstance(found, Job)
        else (found["kind"], found["status"], _loads(found["params"]), _loads(found["result"]))
    )
    if kind not in kinds():
        raise DraftsetError(
            f"job {job_id} is a {kind} job; the service resumes stage jobs ({', '.join(kinds())})",
            hint="a find job resumes with: draftset find --resume RUN_ID (its error names the run)",
        )
    if not resumable(status, result):
        raise DraftsetError(
            f"job {job_id} is {status}; only an interrupted or failed job (or one that stopped early) is resumed"
        )
    return start(service, kind, kinds()[kind].resume_body(service, dict(params)), user)


def resumable(status: str, result: dict[str, Any] | None) -> bool:
    """Interrupted, failed, or ended early by its own limit (train under max_steps/max_seconds): worth going on."""
    return status in ("interrupted", "failed") or (status == "ok" and (result or {}).get("complete") is False)


def run_rows(runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A job's stage runs as the job page's table shows them (static/app.js draws live ones the same way)."""
    rows = []
    for run_id, r in runs.items():
        counts = r.get("counts") or {}
        dropped = {k.removeprefix("dropped_"): v for k, v in sorted(counts.items()) if k.startswith("dropped_") and v}
        rows.append(
            {
                "run_id": run_id,
                "stage": r.get("stage"),
                "status": r.get("status"),
                "in": counts.get("in", 0),
                "out": counts.get("out", 0),
                "skipped": sum(v for k, v in counts.items() if k.startswith("skipped_")),
                "dropped": ", ".join(f"{k}={v:,}" for k, v in dropped.items()) or "-",
                "errors": counts.get("errors", 0),
            }
        )
    return rows


def _loads(value: Any) -> dict[str, Any]:
    import json

    return json.loads(value) if isinstance(value, str) else dict(value or {})


def watched(work: Work) -> Work:
    """`work` with the live counts of every stage run it opens sent as the job's events, and in its result."""

    def run(job: Job) -> dict[str, Any]:
        runs: list[StageRun] = []
        sent: dict[str, dict[str, int]] = {}
        stop = threading.Event()

        def send(stage_run: StageRun, status: str) -> None:
            counts = stage_run.live_counts()
            if status == "running" and sent.get(stage_run.run_id) == counts:
                return
            sent[stage_run.run_id] = counts
            job.emit({"stage": stage_run.stage, "run_id": stage_run.run_id, "status": status, "counts": counts})

        def tick() -> None:
            while not stop.wait(TICK_S):
                for stage_run in list(runs):
                    send(stage_run, "running")

        def opened(stage_run: StageRun) -> None:
            runs.append(stage_run)
            send(stage_run, "running")

        ticker = threading.Thread(target=tick, name=f"{job.job_id}-progress", daemon=True)
        ticker.start()
        try:
            with watch_runs(opened):
                result = work(job)
        finally:
            stop.set()
            ticker.join(timeout=2)
            for stage_run in runs:
                send(stage_run, "ended")
        return {
            **result,
            "stage_runs": [{"stage": r.stage, "run_id": r.run_id, "counts": sent[r.run_id]} for r in runs],
        }

    return run


def catalog_view() -> list[dict[str, Any]]:
    """What GET /api/stages answers and the stages page shows: each kind, its line and its request schema."""
    return [
        {"kind": j.kind, "about": j.about, "settings": list(j.settable), "body": j.body.model_json_schema()}
        for j in kinds().values()
    ]
