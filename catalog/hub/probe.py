"""One quick TCP probe of the Hub endpoint before any Hub call.

huggingface_hub retries a refused connection for ~23 s, printing a warning per try; a dead endpoint
deserves an instant, one-line answer. A success is remembered for a short while per endpoint, so one
command (find: the CLI, then the graph) probes once, while a long-running service still notices a Hub
that went away.
"""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

from catalog.errors import DraftsetError

START_LOCAL_HUB = (
    "start the local Hub with `draftset hub serve tests/fixtures/hub` and export the HF_ENDPOINT it prints"
)


class HubUnreachable(DraftsetError):
    """Nothing answers at the configured Hub endpoint."""


def unreachable(endpoint: str, reason: str) -> HubUnreachable:
    return HubUnreachable(
        f"cannot reach the Hub at {endpoint} ({reason})", hint=f"{START_LOCAL_HUB}, or set HF_ENDPOINT to a running Hub"
    )


PROBE_TTL_S = 60.0
_answered: dict[str, float] = {}  # endpoint -> monotonic time of its last successful probe
_lock = threading.Lock()


def check_reachable(endpoint: str, timeout: float = 3.0) -> None:
    """Raise HubUnreachable unless something accepts TCP connections at the endpoint."""
    with _lock:
        if time.monotonic() - _answered.get(endpoint, -PROBE_TTL_S) < PROBE_TTL_S:
            return
    parts = urlsplit(endpoint)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port that is not a number
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise HubUnreachable(
            f"HF_ENDPOINT {endpoint!r} is not an http(s) URL",
            hint="set HF_ENDPOINT=http://127.0.0.1:8790 (see `draftset hub serve --help`)",
        )
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        raise unreachable(endpoint, exc.strerror or type(exc).__name__) from None
    with _lock:
        _answered[endpoint] = time.monotonic()


def probes_forgotten() -> None:
    """Forget every remembered probe (tests that stop and start Hubs on the same port)."""
    with _lock:
        _answered.clear()
