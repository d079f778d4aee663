"""The local Hub as a starlette app served by uvicorn, in the foreground (CLI) or in a thread (tests).

Binding, the loopback default and running it come from pipeline/servers/http.py, as for every server here;
what is the Hub's own: the app, the missing-folder error, and the viewer's worker pool it starts and ends.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from catalog.errors import DraftsetError

# bind, free_port and url_for are re-exported: tests and kits import the shared plumbing from here, where it began.
from pipeline.servers.http import (  # noqa: F401
    LOOPBACK,
    RunningServer,
    bind,
    free_port,
    listen,
    run_foreground,
    start_in_thread,
    url_for,
)
from pipeline.servers.localhub import api, viewer
from pipeline.servers.localhub.store import HubStore


async def _hub_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, api.HubError)
    return exc.response()


async def _internal_error(request: Request, exc: Exception) -> Response:
    # A bug must still answer JSON like the Hub does (the traceback goes to the server log).
    return api.HubJSON({"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)


def build_app(
    root: str | Path, *, cache: bool = True, page_size: int = api.MAX_PAGE, listing_ttl: float = 1.0
) -> Starlette:
    app = Starlette(
        routes=api.routes + viewer.routes, exception_handlers={api.HubError: _hub_error, Exception: _internal_error}
    )
    app.state.store = HubStore(root, cache=cache, listing_ttl=listing_ttl)
    app.state.page_size = page_size
    return app


def create_server(root: str | Path, *, access_log: bool = False, **app_options: Any) -> uvicorn.Server:
    root = Path(root)
    if not root.is_dir():
        raise DraftsetError(
            f"hub folder {root} does not exist",
            hint="point at a folder laid out as DIR/<owner>/<name>/, e.g. tests/fixtures/hub",
        )
    config = uvicorn.Config(
        build_app(root, **app_options),
        log_level="info" if access_log else "warning",
        access_log=access_log,
        lifespan="off",
    )
    return uvicorn.Server(config)


def serve(
    root: str | Path, host: str = LOOPBACK, port: int = 8790, *, access_log: bool = True, cache: bool = True
) -> None:
    """Serve until interrupted (`draftset hub serve`); prints the endpoint to export once it is bound."""
    server = create_server(root, access_log=access_log, cache=cache)  # a missing folder: one error, before binding
    sock, url = listen(
        host, port, exposes="anyone who can reach it can read these datasets (gated repos accept any token)"
    )
    print(f"Serving {len(HubStore(root).repo_ids())} dataset repo(s) from {root} at {url} (Ctrl-C to stop)")
    print(f"  export HF_ENDPOINT={url}")
    print(f"  viewer endpoints: {url}/viewer/{{is-valid,splits,first-rows,info,size}}", flush=True)
    warm_viewer()
    try:
        run_foreground(sock, lambda: server)
    finally:
        viewer.READER.close()  # its viewer workers never outlive it


_RUNNING_HUBS: set[int] = set()  # Hubs on threads of this process: they share one viewer worker pool
_HUBS_GUARD = threading.Lock()


class RunningHub(RunningServer):
    """The local Hub on a thread: stopping the last one in the process also ends the viewer's workers
    (one pool serves them all; it stays warm while another Hub still runs)."""

    def stop(self, timeout_s: float = 30.0) -> None:
        try:
            super().stop(timeout_s)
        finally:
            with _HUBS_GUARD:
                _RUNNING_HUBS.discard(id(self))
                last = not _RUNNING_HUBS
            if last:
                viewer.READER.close()


def serve_in_thread(
    root: str | Path, host: str = LOOPBACK, port: int = 0, *, startup_timeout: float = 15.0, **app_options: Any
) -> RunningHub:
    """Start the local Hub in a daemon thread; returns once it accepts connections.
    `app_options` go to build_app (cache, page_size, listing_ttl)."""
    running = start_in_thread(
        lambda: create_server(root, **app_options), host, port, name="the local Hub", startup_timeout=startup_timeout
    )
    hub = RunningHub(running.url, running.server, running.thread)
    with _HUBS_GUARD:
        _RUNNING_HUBS.add(id(hub))
    warm_viewer()
    return hub


def warm_viewer() -> None:
    """Start the viewer's workers in the background now (spawning imports pyarrow: seconds on a busy host),
    so the first /viewer request does not pay for it inside its time limit. A Hub stopped before the thread
    gets going starts no workers (they would outlive it)."""
    closes = viewer.READER.closes

    def warm() -> None:
        try:
            viewer.READER.warm(closes)
        except Exception:  # noqa: BLE001 - the Hub stopped while warming, or spawning failed: the first request retries
            pass

    threading.Thread(target=warm, name="viewer-warm", daemon=True).start()
