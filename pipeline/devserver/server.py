"""Run the dev server: in the foreground (`draftset serve-dev`) or in a thread (tests, demo, other stages)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from agents.localhub.server import bind, url_for
from catalog.errors import DraftsetError


@dataclass
class RunningServer:
    url: str  # base URL for the openai client, ending in /v1
    _server: object
    _thread: threading.Thread

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


def _uvicorn_server(model_dir: Path, host: str, port: int, served_name: str | None, log_level: str):
    import uvicorn

    from pipeline.devserver.app import create_app
    from pipeline.devserver.engine import Engine

    app = create_app(Engine(Path(model_dir), served_name))
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False))


def serve(model_dir: Path, host: str = "127.0.0.1", port: int = 8000, served_name: str | None = None) -> None:
    """Serve until interrupted."""
    sock = bind(host, port)  # bound first: a busy port is one clear error before the model loads
    _uvicorn_server(model_dir, host, port, served_name, "info").run(sockets=[sock])


def serve_in_thread(model_dir: Path, port: int = 0, host: str = "127.0.0.1",
                    served_name: str | None = None, timeout_s: float = 60.0) -> RunningServer:
    """Start the server in a daemon thread and wait until it accepts connections; port 0 picks a free one."""
    sock = bind(host, port)  # bound here, not probed: port 0 stays ours, no probe-then-bind race
    port = sock.getsockname()[1]
    try:
        server = _uvicorn_server(model_dir, host, port, served_name, "warning")
    except BaseException:
        sock.close()
        raise
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"devserver-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise DraftsetError(f"dev server did not start on {host}:{port}", hint="see the log above")
        time.sleep(0.02)
    return RunningServer(f"{url_for(host, port)}/v1", server, thread)
