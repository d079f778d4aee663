"""The JSON API of the stage jobs (stages.py): what the service runs, starting one, resuming one.

Roles as for find and ingest: viewers read, operators start and resume. Errors are {error, next}.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from pipeline.servers.service.api import Operator, Viewer, fast_json, service
from pipeline.servers.service.auth import ApiError

router = APIRouter()


@router.get("/api/stages")
def stage_kinds(request: Request, user: Viewer) -> Response:
    """Every stage the service runs as a job (ingest, mix, regenerate, build, capture, train, check, report):
    its line and the JSON schema of its request body."""
    from pipeline.servers.service import stages

    return fast_json(stages.catalog_view())


@router.post("/api/stages/{kind}")
async def start_stage(kind: str, request: Request, user: Operator) -> dict[str, str]:
    """Start one stage as a job: the body is that stage's request (GET /api/stages); names and settings are
    checked before it is queued (400 with the first problem)."""
    from pipeline.servers.service import stages

    try:
        raw = await request.json() if await request.body() else {}
    except ValueError:
        raise ApiError(400, "the body is not JSON", "send a JSON object (GET /api/stages shows the fields)") from None
    job = await run_in_threadpool(stages.start, service(request), kind, raw, user.name)
    return {"job_id": job.job_id}


@router.post("/api/jobs/{job_id}/resume")
def resume_job(job_id: str, request: Request, user: Operator) -> dict[str, str]:
    """Queue an interrupted or failed stage job again with its own params: its stage skips what is done."""
    from pipeline.servers.service import stages

    job = stages.resume(service(request), job_id, user.name)
    return {"job_id": job.job_id, "resumes": job_id}
