"""An endpoint's reply is bounded in time and size, against real loopback HTTP servers: one that trickles a
byte every 100 ms (never idle, so a per-read timeout never fires) and one that never stops sending."""

from __future__ import annotations

import asyncio
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.regenerate import client
from pipeline.regenerate.client import EndpointPool, RequestFailed
from pipeline.regenerate.config import RetryPolicy


class _Hostile(BaseHTTPRequestHandler):
    mode = "trickle"

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            if self.mode == "trickle":
                for _ in range(600):  # a minute of one byte per 100 ms
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            else:
                block = b" " * (1 << 20)
                for _ in range(4096):  # 4 GB, as fast as the client takes it
                    self.wfile.write(block)
        except OSError:  # the client hung up: what we want
            pass


@pytest.fixture
def hostile():
    servers = []

    def start(mode):
        handler = type("H", (_Hostile,), {"mode": mode})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _ask(url, timeout_s):
    pool = EndpointPool([url], api_key="x", retry=RetryPolicy(max_attempts=1, timeout_s=timeout_s), max_inflight=1)

    async def go():
        try:
            return await pool.chat([{"role": "user", "content": "hi"}], {"model": "m", "max_tokens": 8})
        finally:
            await pool.aclose()

    return asyncio.run(go())


def test_timeout_is_a_deadline_against_a_trickling_server(hostile):
    url = hostile("trickle")
    started = time.monotonic()
    with pytest.raises(RequestFailed) as failed:
        _ask(url, timeout_s=1.5)
    took = time.monotonic() - started
    assert took < 4, took  # httpx's read timeout alone waits the whole minute: each byte resets it
    assert failed.value.last_status == "timeout" and "deadline (1.5 s)" in str(failed.value)


def test_a_reply_that_never_ends_is_cut_at_the_size_limit(hostile, monkeypatch):
    monkeypatch.setattr(client, "MAX_REPLY_BYTES", 8 * 1024 * 1024)
    url = hostile("endless")
    started = time.monotonic()
    with pytest.raises(RequestFailed) as failed:
        _ask(url, timeout_s=60)
    assert time.monotonic() - started < 20
    assert failed.value.last_status == "too_large" and "8,388,608 bytes" in str(failed.value)
