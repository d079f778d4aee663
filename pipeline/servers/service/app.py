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

from catalog.db import Catalog
from catalog.errors import CatalogBusy, DraftsetError
from catalog.owner import remove_service_file, write_service_file
from pipeline.servers.service.auth import ApiError, Auth
from pipeline.servers.service.cache import Cache
from pipeline.servers.service.context import Service
from pipeline.servers.service.jobs import Jobs
from pipeline.settings import Settings

HERE = Path(__file__).parent
WORKER_THREADS = 8


def _status_for(exc: DraftsetError) -> int:
    if isinstance(exc, CatalogBusy):
        return 503
    return 404 if str(exc).startswith("no ") else 400


def create_app(settings: Settings, *, url: str | None = None) -> FastAPI:
    """The app for `settings.home`; `url` (when known) goes into service.json for other processes' busy error."""
    from pipeline.servers.service import api, pages

    catalog = Catalog(settings.home)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        catalog.own()  # from here on no other process can open the catalog; ours share one instance
        # Few worker threads: request handlers mostly wait on the catalog's few query slots, and each
        # extra runnable thread takes GIL time from the event loop that answers everyone.
        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        service = Service(settings, catalog, Auth(catalog), Jobs(catalog), Cache(catalog))
        app.state.service = service
        if url:
            write_service_file(settings.home, url)
        try:
            yield
        finally:
            service.jobs.shutdown()
            remove_service_file(settings.home)
            catalog.release()

    app = FastAPI(
        title="draftset",
        version="1",
        lifespan=lifespan,
        description="Find, review and approve training data for EAGLE-3 drafts, as a team.",
    )
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api.router)
    app.include_router(pages.router)

    def wants_html(request: Request) -> bool:
        return not request.url.path.startswith("/api") and "text/html" in request.headers.get("accept", "")

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        if wants_html(request):
            if exc.status == 401:
                return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
            return pages.error_page(request, exc.status, exc.error, exc.next)
        return JSONResponse({"error": exc.error, "next": exc.next}, status_code=exc.status)

    @app.exception_handler(DraftsetError)
    async def draftset_error(request: Request, exc: DraftsetError) -> Response:
        status = _status_for(exc)
        if wants_html(request):
            return pages.error_page(request, status, str(exc), exc.hint)
        return JSONResponse({"error": str(exc), "next": exc.hint}, status_code=status)

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
