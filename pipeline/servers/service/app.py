"""The team service: one FastAPI app on one home. It owns the catalog for its lifetime (catalog/owner.py),
runs jobs in the background (jobs.py) and serves the JSON API (api.py) and the review pages (pages.py).

    app = create_app(Settings())          # what `draftset serve` runs under uvicorn
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from catalog.db import Catalog
from catalog.errors import DraftsetError
from catalog.owner import remove_service_file, write_service_file
from catalog.sql import cancel_all
from catalog.untrusted import clean_text
from pipeline.servers.service.auth import ApiError, Auth
from pipeline.servers.service.bodycap import BodyCap, BodyTooLarge, too_large_body
from pipeline.servers.service.cache import Cache
from pipeline.servers.service.context import Service
from pipeline.servers.service.jobs import Jobs
from pipeline.servers.service.sqlgate import SqlGate
from pipeline.settings import Settings

HERE = Path(__file__).parent
WORKER_THREADS = 8


def _one_line(text: str | None) -> str | None:
    """An error as one printable line: messages quote what clients sent (a repo name with newlines, escapes)."""
    return clean_text(text, keep_newlines=False) if text else text


def _status_for(exc: DraftsetError) -> int:
    return exc.http_status  # each error kind carries its own (catalog/errors.py), whatever its message says


def create_app(settings: Settings, *, url: str | None = None) -> FastAPI:
    """The app for `settings.home`; `url` (when known) goes into service.json for other processes' busy error."""
    from pipeline.servers.service import api, api_reviews, api_stages, pages, stage_pages

    catalog = Catalog(settings.home)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        catalog.own()  # from here on no other process can open the catalog; ours share one instance
        # Few worker threads: request handlers mostly wait on the catalog's few query slots, and each
        # extra runnable thread takes GIL time from the event loop that answers everyone.
        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        sql = SqlGate(catalog, settings.sql_timeout_s, settings.sql_timeout_staff_s, settings.sql_max_bytes)
        service = Service(settings, catalog, Auth(catalog), Jobs(catalog), Cache(catalog), sql)
        app.state.service = service
        if url:
            write_service_file(settings.home, url)
        try:
            yield
        finally:
            cancel_all()  # no statement outlives the service (server.py also does this at the signal)
            service.jobs.shutdown()
            sql.close()  # its catalog copies
            remove_service_file(settings.home)
            catalog.release()

    app = FastAPI(
        title="draftset",
        version="1",
        lifespan=lifespan,
        description="Find, review and approve training data for EAGLE-3 drafts, as a team.",
    )
    app.add_middleware(BodyCap, max_bytes=settings.max_body_bytes)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api.router)
    app.include_router(api_stages.router)
    app.include_router(api_reviews.router)
    app.include_router(pages.router)
    app.include_router(stage_pages.router)

    def wants_html(request: Request) -> bool:
        return not request.url.path.startswith("/api") and "text/html" in request.headers.get("accept", "")

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        if wants_html(request):
            if exc.status == 401:
                return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
            return pages.error_page(request, exc.status, exc.error, exc.next)
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        body = {"error": _one_line(exc.error), "next": _one_line(exc.next)}
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        """Starlette's own errors (404, 405, a body FastAPI could not parse, the body cap) as {error, next}."""
        if isinstance(exc, BodyTooLarge):
            return JSONResponse(too_large_body(exc.limit), status_code=413, headers={"Connection": "close"})
        error, next_ = {
            404: (f"no route {request.method} {request.url.path}", "see /docs for the routes"),
            405: (f"{request.method} is not allowed on {request.url.path}", "see /docs for the routes"),
        }.get(exc.status_code, (f"{exc.detail}", "see /openapi.json for the request shapes"))
        if wants_html(request):
            return pages.error_page(request, exc.status_code, error, next_)
        return JSONResponse({"error": error, "next": next_}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(DraftsetError)
    async def draftset_error(request: Request, exc: DraftsetError) -> Response:
        status = _status_for(exc)
        if wants_html(request):
            return pages.error_page(request, status, str(exc), exc.hint)
        return JSONResponse({"error": _one_line(str(exc)), "next": _one_line(exc.hint)}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse(
            {
                "error": f"invalid request: {where}: {first.get('msg')}".replace(": :", ":"),
                "next": "see /openapi.json for the request shapes",
            },
            status_code=422,
        )

    return app
