"""A token in a query string never reaches the access log: a real service with uvicorn's access log on, a
request whose URL carries a token, and the log lines uvicorn wrote for it."""

from __future__ import annotations

import logging

import httpx
from service_kit import add_users

from pipeline.servers.http import start_in_thread
from pipeline.settings import Settings


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_token_in_a_query_string_is_not_logged(tmp_path):
    from pipeline.servers.service.server import _server

    home = tmp_path / "home"
    home.mkdir()
    add_users(home)
    settings = Settings(DRAFTSET_HOME=str(home))
    running = start_in_thread(lambda: _server(settings, "", "info", True), "127.0.0.1", 0, name="svc")
    secret = "dst_s3cr3t-token-value"
    logged = _Lines()  # on uvicorn's access logger itself: it does not propagate to the root logger
    logging.getLogger("uvicorn.access").addHandler(logged)
    try:
        code = httpx.get(f"{running.url}/api/me?token={secret}&x=1", timeout=10).status_code
    finally:
        running.stop()
        logging.getLogger("uvicorn.access").removeHandler(logged)
    lines = logged.lines
    assert any("/api/me?(query dropped)" in line and str(code) in line for line in lines), lines
    assert not any(secret in line for line in lines)
