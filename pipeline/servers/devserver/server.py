"""Run the dev server: in the foreground (`draftset serve-dev`) or in a thread (tests, demo, other stages).

Binding, the loopback default and running it come from pipeline/servers/http.py; the model is loaded only
after the port is ours, so a busy port is one clear error before seconds of loading.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.servers.devserver.engine import Batching, KvCache
from pipeline.servers.http import LOOPBACK, RunningServer, listen, run_foreground, start_in_thread

if TYPE_CHECKING:
    import uvicorn


@dataclass(frozen=True)
class EngineOptions:
    """Where and how the dev server runs its model: CPU fp32 one at a time (the default), or batched on a GPU
    (`max_batch` > 1), statically or continuously (`batching`), with a growing or preallocated KV cache."""

    device: str = "cpu"
    dtype: str = "float32"
    max_batch: int = 1
    batching: Batching = Batching.static
    kv_cache: KvCache = KvCache.dynamic


# An idle connection is kept this long (uvicorn's default: 5 s, as httpx's client keep-alive). A batching server's
# clients leave theirs idle while they work through a batch's burst of answers, and the client's 5 s start when it
# has read an answer, later than the server's, which start when it sent it: at 5 s the server closed connections
# just as regenerate reused them, and those requests failed (connection/BrokenPipeError, ConnectionResetError;
# retried). Longer than the client's, so the client always lets go first.
KEEP_ALIVE_S = 75  # seconds (uvicorn takes an int)


def _uvicorn_server(
    model_dir: Path, host: str, port: int, served_name: str | None, log_level: str, options: EngineOptions
) -> uvicorn.Server:
    import uvicorn

    from pipeline.servers.devserver.app import create_app
    from pipeline.servers.devserver.engine import Engine

    engine = Engine(
        Path(model_dir),
        served_name,
        options.device,
        options.dtype,
        options.max_batch,
        options.batching,
        options.kv_cache,
    )
    app = create_app(engine)
    if log_level == "info" and options.max_batch > 1:
        _print_batch_summaries()
        continuous = app.state.continuous
        if continuous is not None:
            print(continuous.describe(), flush=True)
    # uvicorn's backlog (2,048) under a client that opens --concurrency connections at once drops the rest's
    # SYNs, and each dropped one waits a 1 s (then 3 s, 7 s) retransmit: listen for as many as one batch.
    backlog = max(2048, 2 * options.max_batch)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        backlog=backlog,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    return uvicorn.Server(config)


def _print_batch_summaries() -> None:
    """The batch worker's INFO summary (every few batches: sizes, wait, run, tokens/s) on stderr, as uvicorn's."""
    import logging

    from pipeline.servers.devserver.batch_stats import log

    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def serve(
    model_dir: Path,
    host: str = LOOPBACK,
    port: int = 8000,
    served_name: str | None = None,
    options: EngineOptions = EngineOptions(),
) -> None:
    """Serve until interrupted; prints the base URL once the port is bound."""
    sock, url = listen(host, port, exposes="anyone who can reach it can run the model (the dev server checks no token)")
    print(f"serving {model_dir} on {url}/v1 (Ctrl-C to stop)", flush=True)
    run_foreground(sock, lambda: _uvicorn_server(model_dir, host, port, served_name, "info", options))


def serve_in_thread(
    model_dir: Path,
    port: int = 0,
    host: str = LOOPBACK,
    served_name: str | None = None,
    timeout_s: float = 60.0,
    options: EngineOptions = EngineOptions(),
) -> RunningServer:
    """Start the server in a daemon thread and wait until it accepts connections; port 0 picks a free one.
    `.url` is the base URL for the openai client, ending in /v1."""
    running = start_in_thread(
        lambda: _uvicorn_server(model_dir, host, port, served_name, "warning", options),
        host,
        port,
        name="the dev server",
        startup_timeout=timeout_s,
    )
    return replace(running, url=f"{running.url}/v1")
