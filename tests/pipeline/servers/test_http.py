"""The plumbing all three servers share (pipeline/servers/http.py), on real sockets and a real uvicorn."""

from __future__ import annotations

import socket

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from catalog.errors import DraftsetError
from pipeline.servers import http


def _tiny() -> uvicorn.Server:
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("up"))])
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.5", True), ("::1", True), ("localhost", True)]
    + [("0.0.0.0", False), ("::", False), ("", False), ("192.168.1.7", False), ("example.org", False)],
)
def test_only_loopback_counts_as_loopback(host, loopback):
    assert http.is_loopback(host) is loopback


def test_a_non_loopback_bind_is_one_warning_line_and_announced_on_loopback(capsys):
    sock, url = http.listen("127.0.0.1", 0, exposes="everything")
    with sock:
        assert url == f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert capsys.readouterr().err == ""
    sock, url = http.listen("0.0.0.0", 0, exposes="anyone can read the datasets")
    with sock:  # every interface: a client on this machine is told the loopback URL
        assert url == f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert capsys.readouterr().err == "warning: listening on 0.0.0.0: anyone can read the datasets\n"
    assert http.url_for("::1", 80) == "http://[::1]:80"


def test_a_busy_port_is_one_clear_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(DraftsetError) as caught:
            http.bind("127.0.0.1", port)
        with pytest.raises(DraftsetError):  # the thread start says the same, before building anything
            http.start_in_thread(lambda: pytest.fail("built on a busy port"), "127.0.0.1", port, name="x")
    assert str(caught.value).startswith(f"cannot listen on 127.0.0.1:{port}: ")
    assert "--port" in caught.value.hint


def test_a_failed_set_up_frees_the_port_at_once():
    port = http.free_port()

    def broken() -> uvicorn.Server:
        raise RuntimeError("the model did not load")

    with pytest.raises(RuntimeError, match="did not load"):
        http.start_in_thread(broken, "127.0.0.1", port, name="x")
    http.bind("127.0.0.1", port).close()  # the port is ours again


def test_a_thread_server_answers_once_started_and_stops():
    running = http.start_in_thread(_tiny, "127.0.0.1", 0, name="the tiny server")
    try:
        assert running.server.started and running.url.startswith("http://127.0.0.1:")
        assert httpx.get(running.url + "/", timeout=5).text == "up"
    finally:
        running.stop(timeout_s=10)
    assert not running.thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(running.url + "/", timeout=2)
