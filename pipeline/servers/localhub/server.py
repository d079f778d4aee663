"""The local Hub as a starlette app served by uvicorn, in the foreground (CLI) or in a thread (tests).

We bind the socket ourselves so a busy port is one clear DraftsetError (uvicorn would log and exit)
and so port=0 tells us the port the OS picked before the server starts.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from catalog.errors import DraftsetError
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


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on sockets whose proto says TCP, and
    # without it keep-alive clients wait ~40 ms per response (Nagle + delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DraftsetError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick a free port with --port N (or stop whatever is using it)",
        ) from None
    return sock


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (tests and benchmarks; closed again before returning)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def url_for(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


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


@dataclass
class RunningServer:
    """A uvicorn server on a daemon thread (the local Hub, the dev target, the test servers)."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout_s: float = 30.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=timeout_s)


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


def start_in_thread(
    make_server: Callable[[], uvicorn.Server], host: str, port: int, *, name: str, startup_timeout: float = 15.0
) -> RunningServer:
    """Bind first (a busy port is one clear error before any slow set-up such as loading a model; port 0
    stays ours: no probe-then-bind race), build the server, run it on a daemon thread and return once it
    accepts connections."""
    sock = bind(host, port)
    try:
        server = make_server()
    except BaseException:
        sock.close()
        raise
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise DraftsetError(f"{name} did not start on {host}:{port}", hint="see the log above")
        time.sleep(0.01)
    return RunningServer(url_for(host, sock.getsockname()[1]), server, thread)


def serve_in_thread(
    root: str | Path, host: str = "127.0.0.1", port: int = 0, *, startup_timeout: float = 15.0, **app_options: Any
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
    so the first /viewer request does not pay for it inside its time limit."""

    def warm() -> None:
        try:
            viewer.READER.warm()
        except Exception:  # noqa: BLE001 - the Hub stopped while warming, or spawning failed: the first request retries
            pass

    threading.Thread(target=warm, name="viewer-warm", daemon=True).start()
