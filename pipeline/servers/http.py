"""What draftset's three HTTP servers (the local Hub, the dev target, the team service) share: where they
listen, the socket, and how they run. Each server keeps its own app, log level and shutdown extras.

- Where: loopback by default (`LOOPBACK`). Another interface only when the user names it (`--host`), and then
  one warning line on stderr saying who can reach what; a wildcard bind is announced with the loopback URL a
  client on this machine uses (`listen` does all three for a foreground server).
- The socket is bound here, before any slow set-up (loading a model, taking the catalog): a busy port is one
  clear DraftsetError (uvicorn would log and exit), and port 0 yields the port the OS picked with no
  probe-then-bind race.
- Running: in the foreground until SIGINT/SIGTERM (`run_foreground`: uvicorn's signal handlers), or on a daemon
  thread that is returned once it accepts connections (`start_in_thread`) and stopped with `RunningServer.stop`.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from catalog.errors import DraftsetError

if TYPE_CHECKING:
    import uvicorn

LOOPBACK = "127.0.0.1"
_WILDCARDS = ("0.0.0.0", "::", "")  # every interface: a client on this machine reaches it on loopback


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def warn_if_exposed(host: str, exposes: str) -> None:
    """One warning line when `host` is not loopback; `exposes` says what anyone who reaches it gets."""
    if not is_loopback(host):
        print(f"warning: listening on {host}: {exposes}", file=sys.stderr, flush=True)


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


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on right now (tests, benchmarks, the demo; closed again before returning)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def wait_http(url: str, timeout_s: float = 120.0) -> None:
    """Block until `url` answers (a server started in another process is up), or exit with one line."""
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{url} did not come up within {timeout_s:.0f}s")


def url_for(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def local_url(host: str, sock: socket.socket) -> str:
    """The URL to announce for a socket bound on `host`: a wildcard bind is reached on loopback from here."""
    return url_for(LOOPBACK if host in _WILDCARDS else host, sock.getsockname()[1])


def listen(host: str, port: int, *, exposes: str) -> tuple[socket.socket, str]:
    """A foreground server's start: the bound socket (a busy port is one clear error) and the URL to
    announce; one warning line first when `host` is not loopback (`exposes`: what anyone reaching it gets)."""
    sock = bind(host, port)
    warn_if_exposed(host, exposes)
    return sock, local_url(host, sock)


@dataclass
class RunningServer:
    """A uvicorn server on a daemon thread (the local Hub, the dev target, the service, the test servers)."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout_s: float = 30.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=timeout_s)


def _build(sock: socket.socket, make_server: Callable[[], uvicorn.Server]) -> uvicorn.Server:
    try:
        return make_server()
    except BaseException:
        sock.close()  # the set-up failed: the port is free again at once
        raise


def run_foreground(sock: socket.socket, make_server: Callable[[], uvicorn.Server]) -> None:
    """Build the server for a socket `bind` returned and serve until SIGINT/SIGTERM (uvicorn's handlers);
    a failure in the server raises."""
    _build(sock, make_server).run(sockets=[sock])


def start_in_thread(
    make_server: Callable[[], uvicorn.Server], host: str, port: int, *, name: str, startup_timeout: float = 15.0
) -> RunningServer:
    """Bind first (a busy port is one clear error before any slow set-up such as loading a model; port 0
    stays ours: no probe-then-bind race), build the server, run it on a daemon thread and return once it
    accepts connections."""
    sock = bind(host, port)
    server = _build(sock, make_server)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise DraftsetError(f"{name} did not start on {host}:{port}", hint="see the log above")
        time.sleep(0.01)
    return RunningServer(url_for(host, sock.getsockname()[1]), server, thread)
