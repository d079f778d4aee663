"""The JSON API. Every route but /health needs a bearer token (or a page session) with the role it names.

viewer: read and SQL · reviewer: also test, approve, reject, map · operator: also start jobs.
Errors are {error, next}, as the CLI prints them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from adapters.review import review, store
from catalog.errors import DraftsetError
from pipeline.servers.service import queries, review_data
from pipeline.servers.service.auth import ApiError
from pipeline.servers.service.jobs import Job
from pipeline.servers.service.users import Role, User
from pipeline.servers.service.work import IngestBody

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service

router = APIRouter()


def service(request: Request) -> Service:
    return request.app.state.service


def _role(needed: Role) -> Any:
    async def check(request: Request) -> User:
        return await service(request).auth.require(request, needed)

    return Depends(check)


# The user behind the request, checked for the role each route needs (401 without a token, 403 naming the role).
Viewer = Annotated[User, _role("viewer")]
Reviewer = Annotated[User, _role("reviewer")]
Operator = Annotated[User, _role("operator")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FindBody(Strict):
    domain: str = Field(min_length=1, max_length=200)
    samples: int = Field(100_000, ge=1, le=100_000_000)
    policy: Literal["heuristic", "llm"] = "heuristic"
    propose: int = Field(5, ge=0, le=50, description="then propose adapters for the N top planned datasets")


class SqlBody(Strict):
    query: str = Field(min_length=1, max_length=20_000)
    limit: int = Field(1000, ge=1, le=100_000)


class NoteBody(Strict):
    note: str | None = Field(None, max_length=2000)
    force: bool = False
    checked: list[str] = Field(default_factory=list, max_length=100)  # open REVIEW items the reviewer checked


class TestBody(Strict):
    rows: int = Field(500, ge=1, le=10_000)


# /health and /api/me are async and touch no query slot: they answer on the event loop even while every
# worker thread and statement slot is busy (authentication reads its in-memory table, auth.py).
@router.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/api/me")
async def me(user: Viewer) -> dict[str, str]:
    return {"name": user.name, "role": user.role}


# -- jobs -----------------------------------------------------------------------------------------
@router.post("/api/find")
def start_find(body: FindBody, request: Request, user: Operator) -> dict[str, str]:
    from pipeline.servers.service.work import start_find as start

    service(request).rates.take(user, "find")
    job = start(service(request), body.domain, body.samples, body.policy, body.propose, user.name)
    return {"job_id": job.job_id}


@router.post("/api/ingest")
def start_ingest(body: IngestBody, request: Request, user: Operator) -> dict[str, str]:
    """Approved datasets → canonical shards; with neither plan nor repos, every approved adapter."""
    from pipeline.servers.service import stages  # ingest is a stage job: progress from its runs, resumed by re-queueing

    job = stages.start(service(request), "ingest", body.model_dump(), user.name)
    return {"job_id": job.job_id}


def _job(request: Request, job_id: str) -> Job | dict[str, Any]:
    job = service(request).jobs.get(job_id)
    if job is None:
        raise ApiError(404, f"no job {job_id!r}", "GET /api/jobs lists recent jobs")
    return job


@router.get("/api/jobs")
def list_jobs(request: Request, user: Viewer) -> list[dict[str, Any]]:
    return service(request).jobs.recent()


@router.get("/api/jobs/{job_id}")
def get_job(job_id: str, request: Request, user: Viewer) -> dict[str, Any]:
    job = _job(request, job_id)
    if isinstance(job, Job):
        return job.view()
    return {**job, "params": _loads(job["params"]), "result": _loads(job["result"]), "agents": {}, "runs": {}}


def fast_json(data: Any) -> Response:
    """orjson straight to bytes: FastAPI's generic encoder walks big nested answers (specs, raw rows,
    previews) object by object, several times slower, and under 50 readers that is the bottleneck."""
    return Response(orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS), media_type="application/json")


def _loads(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text


@router.get("/api/jobs/{job_id}/events")
async def job_events(job_id: str, request: Request, user: Viewer) -> StreamingResponse:
    """Server-sent events: every progress event so far, then new ones live, then `event: end`."""
    job = _job(request, job_id)

    async def stream() -> AsyncIterator[str]:
        if not isinstance(job, Job):  # a finished job of an earlier service process: its end only
            yield f"event: end\ndata: {json.dumps({'status': job['status']})}\n\n"
            return
        sent = 0
        while True:
            while sent < len(job.events):
                yield f"data: {json.dumps(job.events[sent], default=str)}\n\n"
                sent += 1
            if job.done and sent >= len(job.events):
                yield f"event: end\ndata: {json.dumps(job.view(), default=str)}\n\n"
                return
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.1)

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


# -- reading the catalog -----------------------------------------------------------------------------
@router.post("/api/sql")
async def sql(body: SqlBody, request: Request, user: Viewer) -> Response:
    """Read-only SQL (the CLI's guards) under a time limit (DRAFTSET_SQL_TIMEOUT_S for viewers), capped by
    rows and bytes: one JSON document {columns, rows, row_count, truncated, truncated_by}."""
    s = service(request)
    s.rates.take(user, "sql")
    return await s.sql.run(request, user, body.query, body.limit)


@router.get("/api/candidates")
def candidates(
    request: Request,
    user: Viewer,
    category: str | None = None,
    status: str | None = None,
    q: str | None = Query(None, max_length=200),
    min_score: float | None = None,
    limit: int = Query(200, ge=1, le=5000),
) -> Response:
    s = service(request)
    return fast_json(
        s.cache.get(
            ("candidates", category, status, q, min_score, limit),
            lambda: queries.candidates(s.catalog, category, status, q, min_score, limit),
        )
    )


@router.get("/api/plan")
def plan(request: Request, user: Viewer, plan_id: str | None = None) -> Response:
    s = service(request)
    found = s.cache.get(("plan", plan_id), lambda: queries.plan(s.catalog, plan_id))
    if found is None:
        raise ApiError(404, "no plan yet", "start a find run: POST /api/find (operator)")
    return fast_json(found)


@router.get("/api/adapters")
def adapters(request: Request, user: Viewer) -> Response:
    s = service(request)
    return fast_json(s.cache.get("adapters", lambda: [review_data.summary(r) for r in store.list_all(s.catalog)]))


@router.get("/api/adapters/{owner}/{name}")
async def adapter(
    owner: str, name: str, request: Request, user: Viewer, rows: int = Query(3, ge=0, le=review_data.MAX_PREVIEW_ROWS)
) -> Response:
    s = service(request)
    detail = await s.previews.run(  # previews read data files: on their own threads, bounded by this request
        request,
        lambda: review_data.detail(
            s.catalog, f"{owner}/{name}", rows, endpoint=s.settings.hf_endpoint, token=s.hf_token, cache=s.cache
        ),
    )
    return fast_json(detail)


# -- reviewing -------------------------------------------------------------------------------------
@router.post("/api/adapters/{owner}/{name}/test")
def test_adapter(
    owner: str, name: str, request: Request, user: Reviewer, body: TestBody | None = None
) -> dict[str, str]:
    from pipeline.servers.service.work import start_test

    service(request).rates.take(user, "test")
    job = start_test(service(request), f"{owner}/{name}", (body or TestBody()).rows, user.name)
    return {"job_id": job.job_id}


class ProposeBody(Strict):
    rows: int = Field(500, ge=1, le=10_000)
    category: str | None = Field(None, max_length=80)


@router.post("/api/adapters/{owner}/{name}/propose")
def propose_adapter(
    owner: str, name: str, request: Request, user: Reviewer, body: ProposeBody | None = None
) -> dict[str, str]:
    """Propose one dataset (infer, store, contract-test) as a job: `draftset adapters propose` in team mode."""
    from pipeline.servers.service.work import start_propose

    given = body or ProposeBody()
    service(request).rates.take(user, "test")  # a contract run's cost, under the same limit as a test
    job = start_propose(service(request), f"{owner}/{name}", given.rows, given.category, user.name)
    return {"job_id": job.job_id}


@router.post("/api/adapters/{owner}/{name}/approve")
def approve(owner: str, name: str, body: NoteBody, request: Request, user: Reviewer) -> dict[str, Any]:
    if body.checked:
        review.mark_checked(service(request).catalog, f"{owner}/{name}", body.checked, user.name)
    record = review.approve(service(request).catalog, f"{owner}/{name}", user.name, body.note, body.force)
    return review_data.summary(record)


@router.post("/api/adapters/{owner}/{name}/reject")
def reject(owner: str, name: str, body: NoteBody, request: Request, user: Reviewer) -> dict[str, Any]:
    record = review.reject(service(request).catalog, f"{owner}/{name}", user.name, body.note or "")
    return review_data.summary(record)


@router.post("/api/adapters/{owner}/{name}/map")
def map_roles(owner: str, name: str, body: dict[str, str], request: Request, user: Reviewer) -> dict[str, Any]:
    if not body:
        raise DraftsetError("nothing to map", hint='send {"LABEL": "ROLE"}, e.g. {"human": "user"}')
    record = review.map_roles(
        service(request).catalog, f"{owner}/{name}", [f"{label}={r}" for label, r in body.items()], user.name
    )
    return {**review_data.summary(record), "role_map": record.spec.role_map}


# -- reviewers' per-record flags (adapters.review.flags) ------------------------------------------------------
class FlagBody(Strict):
    spec_hash: str = Field(min_length=8, max_length=64, description="the spec the reviewer looked at")
    row_index: int = Field(ge=0)
    kind: str = Field(min_length=1, max_length=40)
    note: str | None = Field(None, max_length=2000)
    record_id: str | None = Field(None, max_length=300)


class ResolveBody(Strict):
    note: str = Field(min_length=1, max_length=2000)


@router.get("/api/adapters/{owner}/{name}/flags")
def list_flags(owner: str, name: str, request: Request, user: Viewer) -> Response:
    """Every flag on this adapter, each with its state (open / stale / resolved) against the current spec."""
    return fast_json(review_data.flag_list(store.require(service(request).catalog, f"{owner}/{name}")))


@router.post("/api/adapters/{owner}/{name}/flags")
def add_flag(owner: str, name: str, body: FlagBody, request: Request, user: Reviewer) -> dict[str, Any]:
    from adapters.review import flags

    catalog, repo_id = service(request).catalog, f"{owner}/{name}"
    record = store.require(catalog, repo_id)
    flag = flags.add(
        catalog,
        repo_id,
        body.spec_hash,
        record.revision,
        body.row_index,
        body.kind,
        body.note,
        user.name,
        body.record_id,
        current=record.spec_hash,
    )
    return {**flag.model_dump(mode="json"), "state": flag.state(record.spec_hash)}


@router.post("/api/adapters/{owner}/{name}/flags/{flag_id}/resolve")
def resolve_flag(
    owner: str, name: str, flag_id: str, body: ResolveBody, request: Request, user: Reviewer
) -> dict[str, Any]:
    from adapters.review import flags

    flag = flags.resolve(service(request).catalog, f"{owner}/{name}", flag_id, user.name, body.note)
    return {**flag.model_dump(mode="json"), "state": "resolved"}


# -- users (operators) --------------------------------------------------------------------------------
class UserBody(Strict):
    name: str = Field(min_length=1, max_length=64)
    role: Literal["viewer", "reviewer", "operator"]
    replace: bool = False  # re-issue an existing user's token (users.add_user refuses it otherwise)


@router.post("/api/users")
def add_user(body: UserBody, request: Request, user: Operator) -> dict[str, str]:
    """Create a user (or replace their token) while the service owns the catalog; the token is in this
    answer only."""
    from pipeline.servers.service.users import add_user as add

    token = add(service(request).catalog, body.name, body.role, replace=body.replace)
    return {"name": body.name, "role": body.role, "token": token}


# -- team mode: the CLI's read commands through the service (client.py; the CLI prints them as it does locally) --
@router.get("/api/adapters/record")
def adapter_record(request: Request, user: Viewer, repo: str = Query(..., min_length=1, max_length=300)) -> Response:
    """The stored adapter record (spec with reasons and golden rows, contract, review): `adapters show`."""
    return fast_json(store.require(service(request).catalog, repo).model_dump(mode="json"))


@router.get("/api/adapters/row")
def adapter_row(
    request: Request,
    user: Viewer,
    repo: str = Query(..., min_length=1, max_length=300),
    row: int = Query(0, le=1_000_000_000),  # below 0: read_row says so as the local command does
) -> Response:
    """One raw row read from the Hub with the service's token, and what the current spec makes of it."""
    s = service(request)
    s.rates.take(user, "test")  # a Hub read, as a contract test is
    return fast_json(queries.adapter_row(s.catalog, repo, row, endpoint=s.settings.hf_endpoint, token=s.hf_token))


@router.get("/api/status")
def status(request: Request, user: Viewer, limit: int = Query(10, ge=1, le=1000)) -> Response:
    """What `draftset status` shows for the service's home, and who holds its catalog (this service)."""
    s = service(request)
    return fast_json(queries.status(s.catalog, s.settings.home, limit, str(request.base_url).rstrip("/")))


@router.get("/api/users")
def list_users(request: Request, user: Operator) -> Response:
    """Users and roles (never a token or its hash)."""
    from pipeline.servers.service.users import list_users as listed

    return fast_json(listed(service(request).catalog))


@router.delete("/api/users/{name}")
def remove_user(name: str, request: Request, user: Operator) -> dict[str, str]:
    """Disable a user; the service's authentication table drops their token within its refresh interval."""
    from pipeline.servers.service.users import remove_user as remove

    remove(service(request).catalog, name)
    return {"name": name, "status": "disabled"}
