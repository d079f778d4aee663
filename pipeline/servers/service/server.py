"""Run the service: in the foreground (`draftset serve`) or on a thread (tests, the benchmark).

Binding, the loopback default and running it come from pipeline/servers/http.py; what is the service's own:
it takes the catalog once the port is bound, and its shutdown also interrupts every running SQL statement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.servers.http import LOOPBACK, RunningServer, listen, run_foreground, start_in_thread
from pipeline.settings import Settings

if TYPE_CHECKING:
    import uvicorn


def _server(settings: Settings, url: str, log_level: str, access_log: bool) -> uvicorn.Server:
    import uvicorn

    from catalog.sql import cancel_all
    from pipeline.servers.service.access_log import install as drop_query_strings
    from pipeline.servers.service.app import create_app

    class Server(uvicorn.Server):
        """uvicorn's server, but SIGTERM/SIGINT also interrupt every running statement at once: uvicorn's
        graceful shutdown waits for open requests, and a statement might otherwise run for its whole limit."""

        def handle_exit(self, sig: int, frame: object) -> None:
            super().handle_exit(sig, frame)  # type: ignore[arg-type]
            cancel_all()

    # The access log shows method, path and status only: tokens travel in headers and form bodies, and a
    # query string (where a pasted token would sit) is dropped from each line (access_log.py).
    # Keep-alive 30 s, not uvicorn's 5: a client's pooled connection idle for 5 s while other requests
    # were slow was closed just as the client reused it (ReadError under 50 readers in bench_service).
    config = uvicorn.Config(
        create_app(settings, url=url),
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=5,
        timeout_keep_alive=30,
    )
    drop_query_strings()  # after Config: it (re)configures uvicorn's loggers
    return Server(config)


def serve(settings: Settings, host: str = LOOPBACK, port: int = 8800) -> None:
    """Serve until interrupted (Ctrl-C stops it; running jobs are marked interrupted at the next start)."""
    from catalog.db import Catalog

    # A busy port is one clear error before the catalog is taken.
    sock, url = listen(
        host, port, exposes="plain HTTP: tokens cross the network in the clear; put TLS in front (README)"
    )
    Catalog(settings.home).own()  # a busy catalog is one clear error, not a failed startup's traceback
    print(f"draftset service on {url} for home {settings.home} (API docs: {url}/docs)", flush=True)
    run_foreground(sock, lambda: _server(settings, url, "info", True))


def serve_in_thread(settings: Settings, host: str = LOOPBACK, port: int = 0) -> RunningServer:
    """Start on a daemon thread; returns once the catalog is owned and the server accepts connections.
    Unlike `serve` it writes no service.json (the file that points other processes' CLI at the service)."""
    return start_in_thread(lambda: _server(settings, "", "warning", False), host, port, name="the draftset service")
