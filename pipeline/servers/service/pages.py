"""Server-rendered review pages (Jinja2, autoescaped: catalog and card text is data, never markup).

Forms post to these routes with the session's CSRF token; the find page and the SQL console use a little
JavaScript against the JSON API with the same token in a header. Login takes a token once and sets an
HttpOnly, SameSite=Strict session cookie; the token itself is never put in a page or a cookie.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from adapters.review import review, store
from agents.planning import human_bytes
from catalog.errors import DraftsetError, NotFound
from catalog.untrusted import card_text
from pipeline.servers.service import queries, review_data
from pipeline.servers.service.auth import SESSION_COOKIE, SESSION_TTL_S, ApiError, same_secret
from pipeline.servers.service.jobs import Job
from pipeline.servers.service.users import Role, User

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
templates.env.filters["pretty"] = lambda v: json.dumps(v, indent=1, ensure_ascii=False, default=str)
templates.env.filters["thousands"] = lambda v: "" if v is None else f"{v:,}" if isinstance(v, int) else v
templates.env.filters["plain"] = card_text
templates.env.filters["bytes"] = human_bytes  # the CLI's one unit convention: 67.2 GB below a TB, 9.2 TB above
LOGIN_CSRF = "draftset_login_csrf"


def _service(request: Request) -> Service:
    return request.app.state.service


async def _user(request: Request, role: Role = "viewer") -> User:
    return await _service(request).auth.require(request, role)


def render(request: Request, name: str, user: User | None, status: int = 200, **context: Any) -> HTMLResponse:
    session = _service(request).auth.session(request)
    return templates.TemplateResponse(
        request, name, {"user": user, "csrf": session.csrf if session else "", **context}, status_code=status
    )


def error_page(request: Request, status: int, error: str, hint: str | None) -> HTMLResponse:
    session = _service(request).auth.session(request)
    return render(request, "error.html", session.user if session else None, status, error=error, hint=hint)


def _safe_next(path: str | None) -> str:
    # Only a local path: a crafted ?next=https://evil.example must not turn login into an open redirect.
    return path if path and path.startswith("/") and not path.startswith("//") else "/"


# -- login ----------------------------------------------------------------------------------------
@router.get("/login")
def login_form(request: Request, next: str = "/", failed: int = 0) -> HTMLResponse:
    token = secrets.token_urlsafe(24)
    response = render(request, "login.html", None, login_csrf=token, next=_safe_next(next), failed=failed)
    secure = _service(request).settings.secure_cookies  # behind a TLS proxy: DRAFTSET_SECURE_COOKIES=1
    response.set_cookie(LOGIN_CSRF, token, httponly=True, samesite="strict", max_age=3600, secure=secure)
    return response


@router.post("/login")
def login(
    request: Request, token: str = Form(...), csrf_token: str = Form(""), next: str = Form("/")
) -> RedirectResponse:
    cookie = request.cookies.get(LOGIN_CSRF, "")
    if not cookie or not same_secret(csrf_token, cookie):
        raise ApiError(403, "missing or wrong CSRF token", "reload the login page and try again")
    found = _service(request).auth.login(token)
    if found is None:
        return RedirectResponse(f"/login?failed=1&next={quote(_safe_next(next))}", status_code=303)
    sid, _ = found
    response = RedirectResponse(_safe_next(next), status_code=303)
    secure = _service(request).settings.secure_cookies
    response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="strict", max_age=SESSION_TTL_S, secure=secure)
    response.delete_cookie(LOGIN_CSRF)
    return response


@router.post("/logout")
async def logout(request: Request) -> RedirectResponse:
    await _user(request)  # checks the CSRF token: a foreign page cannot log you out
    _service(request).auth.logout(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


# -- the catalog ----------------------------------------------------------------------------------
ADAPTER_FILTERS = ("needs review", "blocked", "ready", "approved", "no adapter")


def _adapter_matches(summary: dict | None, wanted: str) -> bool:
    """The catalog's adapter filter: `needs review` = an open REVIEW item or flag blocks the approval."""
    if not wanted:
        return True
    if summary is None:
        return wanted == "no adapter"
    approval = str(summary["approval"])
    if wanted == "needs review":
        return approval.startswith("blocked") and ("REVIEW" in approval or "flag" in approval)
    return approval.startswith(wanted)


@router.get("/")
async def catalog_page(
    request: Request, category: str = "", status: str = "", q: str = "", min_score: str = "", adapter: str = ""
) -> HTMLResponse:
    user = await _user(request)
    cat = _service(request).catalog
    try:
        score = float(min_score) if min_score else None
    except ValueError:
        score = None

    def load() -> tuple[list, list, dict | None, dict]:
        rows = queries.candidates(cat, category or None, status or None, q or None, score, 500)
        categories = sorted(
            {r["category"] for r in queries.candidates(cat, None, None, None, None, 5000) if r["category"]}
        )
        adapters = {r.repo_id: review_data.summary(r) for r in store.list_all(cat)} if cat.path.exists() else {}
        rows = [r for r in rows if _adapter_matches(adapters.get(r["repo_id"]), adapter)]
        return rows, categories, queries.plan(cat), adapters

    rows, categories, plan, adapters = await run_in_threadpool(load)
    return render(
        request,
        "catalog.html",
        user,
        rows=rows,
        plan=plan,
        categories=categories,
        adapters=adapters,
        adapter_filters=ADAPTER_FILTERS,
        filters={"category": category, "status": status, "q": q, "min_score": min_score, "adapter": adapter},
    )


# -- find -----------------------------------------------------------------------------------------
@router.get("/find")
async def find_page(request: Request) -> HTMLResponse:
    user = await _user(request)
    return render(request, "find.html", user, jobs=_service(request).jobs.recent())


@router.post("/find")
async def find_start(
    request: Request,
    domain: str = Form(...),
    samples: int = Form(100_000),
    policy: str = Form("heuristic"),
    propose: int = Form(5),
) -> RedirectResponse:
    from pipeline.servers.service.api import FindBody
    from pipeline.servers.service.work import start_find

    user = await _user(request, "operator")
    _service(request).rates.take(user, "find")  # the API's limits: a form is no way around them
    body = FindBody(domain=domain, samples=samples, policy=policy, propose=propose)
    job = await run_in_threadpool(
        start_find, _service(request), body.domain, body.samples, body.policy, body.propose, user.name
    )
    return RedirectResponse(f"/jobs/{job.job_id}", status_code=303)


@router.get("/jobs/{job_id}")
async def job_page(request: Request, job_id: str) -> HTMLResponse:
    from agents.categories import BY_KEY
    from pipeline.servers.service import stages

    user = await _user(request)
    job = _service(request).jobs.get(job_id)
    if job is None:
        raise ApiError(404, f"no job {job_id!r}", "the find page lists recent jobs")
    view = job.view() if isinstance(job, Job) else {**job, "agents": {}, "result": json.loads(job["result"] or "null")}
    agents = {key: c.title for key, c in BY_KEY.items()}
    runs = view.get("runs") or {  # a job of an earlier service process: the runs its result recorded
        r["run_id"]: {**r, "status": "ended"} for r in (view["result"] or {}).get("stage_runs", [])
    }
    return render(
        request,
        "job.html",
        user,
        job=view,
        agent_titles=agents,
        stage_job=view["kind"] in stages.kinds(),
        runs=stages.run_rows(runs),
        resumable=view["kind"] in stages.kinds() and stages.resumable(view["status"], view["result"]),
    )


# -- adapters -------------------------------------------------------------------------------------
@router.get("/adapters")
async def adapters_page(request: Request) -> HTMLResponse:
    user = await _user(request)
    records = await run_in_threadpool(store.list_all, _service(request).catalog)
    return render(request, "adapters.html", user, adapters=[review_data.summary(r) for r in records])


@router.get("/adapters/{owner}/{name}")
async def adapter_page(
    request: Request, owner: str, name: str, rows: int = 20, done: str = "", refused: str = "", q: str = ""
) -> HTMLResponse:
    from pipeline.servers.service import record_reviews

    user = await _user(request)
    s = _service(request)
    q = q[:200]
    data = await s.previews.run(
        request,
        lambda: review_data.detail(
            s.catalog,
            f"{owner}/{name}",
            max(0, min(rows, review_data.MAX_PREVIEW_ROWS)),
            endpoint=s.settings.hf_endpoint,
            token=s.hf_token,
            cache=s.cache,
        ),
    )
    sample = [p["row_index"] for p in data["previews"]]
    reviews = await run_in_threadpool(record_reviews.state, s.catalog, f"{owner}/{name}", sample)
    if q:  # text search: only the sampled records that hold it (the count stays the sample's)
        data = {**data, "previews": [p for p in data["previews"] if record_reviews.matches(p, q)]}
    return render(
        request,
        "adapter.html",
        user,
        a=data,
        reviews=reviews,
        q=q,
        rows=rows,
        done=done,
        refused=refused[:2000],  # the approval's refusal, shown as text beside the form it came from
        max_rows=review_data.MAX_PREVIEW_ROWS,
    )


@router.post("/adapters/{owner}/{name}/{action}")
async def adapter_action(
    request: Request,
    owner: str,
    name: str,
    action: str,
    note: str = Form(""),
    force: str = Form(""),
    checked: Annotated[list[str] | None, Form()] = None,  # open REVIEW items the reviewer ticked as checked
) -> RedirectResponse:
    from pipeline.servers.service.work import start_test

    user = await _user(request, "reviewer")
    repo_id, cat = f"{owner}/{name}", _service(request).catalog
    if action == "approve":
        try:
            if checked:
                await run_in_threadpool(review.mark_checked, cat, repo_id, checked, user.name)
            await run_in_threadpool(review.approve, cat, repo_id, user.name, note or None, force == "on")
        except NotFound:
            raise
        except DraftsetError as exc:  # refused: back on the adapter's own page, the reason beside the form
            said = quote(f"{exc}" + (f" · next: {exc.hint}" if exc.hint else ""), safe="")
            return RedirectResponse(f"/adapters/{owner}/{name}?refused={said}#decide", status_code=303)
    elif action == "reject":
        await run_in_threadpool(review.reject, cat, repo_id, user.name, note)
    elif action == "test":
        _service(request).rates.take(user, "test")
        job = await run_in_threadpool(start_test, _service(request), repo_id, 500, user.name)
        return RedirectResponse(f"/jobs/{job.job_id}", status_code=303)
    else:
        raise ApiError(404, f"no adapter action {action!r}", "approve, reject or test")
    return RedirectResponse(f"/adapters/{owner}/{name}?done={action}d", status_code=303)


# -- SQL console ----------------------------------------------------------------------------------
@router.get("/sql")
async def sql_page(
    request: Request, q: str = "SELECT repo_id, status, reviewed_by, note FROM adapters"
) -> HTMLResponse:
    user = await _user(request)
    return render(request, "sql.html", user, query=q)
