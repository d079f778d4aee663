"""Failed attempts are counted by reason, per endpoint, in progress.json and in the run's --json document: on the
H200 run progress.json said 4,219 of 22,416 attempts failed on one endpoint (all retried) and nobody could say
what they were."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from regen_helpers import simple_mix, write_mix
from typer.testing import CliRunner

from pipeline.cli.app import app
from pipeline.regenerate.client import EndpointPool, RequestFailed
from pipeline.regenerate.config import RetryPolicy
from pipeline.regenerate.run import regen_dir


def test_retried_failures_are_counted_by_reason_in_progress_and_json(home, fake_server):
    server = fake_server(fail_first=1)  # every request's first attempt is a 500, its retry succeeds
    write_mix(home, "m", simple_mix(7))
    args = ["regenerate", "m", "--endpoint", server.url, "--no-progress", "--max-attempts", "2", "--backoff", "0"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["on_disk"] == {"results": 7, "errors": 0, "skipped": 0}
    (endpoint,) = doc["endpoints"]
    assert endpoint["url"] == server.url
    assert endpoint["requests"] == 14 and endpoint["failures"] == 7
    assert endpoint["failures_by_reason"] == {"http_500": 7}
    (live,) = json.loads((regen_dir(home, "m") / "progress.json").read_text())["endpoints"]
    assert live["failures_by_reason"] == {"http_500": 7} and live["failures"] == 7
    assert "7 of 14 attempts failed (http_500 7)" in res.stderr  # said under the table, too


def test_a_connection_failure_is_counted_by_its_innermost_cause():
    with socket.socket() as s:  # a port nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    retry = RetryPolicy(max_attempts=2, backoff_s=0, timeout_s=10)
    pool = EndpointPool([f"http://127.0.0.1:{port}"], api_key="x", retry=retry, max_inflight=1)

    async def ask() -> None:
        try:
            await pool.chat([{"role": "user", "content": "hi"}], {"model": "m"})
        finally:
            await pool.aclose()

    with pytest.raises(RequestFailed):
        asyncio.run(ask())
    (endpoint,) = pool.endpoints
    assert endpoint.failures == endpoint.requests == 2
    (kind,) = endpoint.failures_by_reason
    assert kind.startswith("connection/") and endpoint.failures_by_reason[kind] == 2
    assert kind != "connection/APIConnectionError"  # the cause, not the wrapper


def test_the_dev_server_keeps_an_idle_connection_longer_than_the_client_does(devserver_url):
    """httpx keeps an idle connection 5 s, from when it has read the answer; the dev server, at uvicorn's 5 s
    from when it sent it, closed connections as regenerate reused them (the H200 run's retried failures)."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(devserver_url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    try:
        connection.request("GET", "/health")
        assert connection.getresponse().read()
        time.sleep(6)  # past httpx's keep-alive (and uvicorn's default): the client would have let go by now
        connection.request("GET", "/health")  # the same connection: the server must not have closed it
        assert json.loads(connection.getresponse().read())["status"] == "ok"
    finally:
        connection.close()
