"""One user cannot take the service down: statements are bounded, authentication and /health never wait
behind them, bodies are capped before anything reads them, expensive routes are rate-limited, and
SIGTERM stops the service within seconds with its statements cancelled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from service_kit import Svc, add_users

from catalog import sql as catalog_sql
from pipeline.servers.service.ratelimit import Rate, RateLimits
from pipeline.settings import Settings

ROOT = Path(__file__).resolve().parents[4]
# Minutes of work on any machine; only the time limit or an interrupt ends it.
ENDLESS = "SELECT sum(i * i % 7) FROM range(100000000000000) t(i)"


@pytest.fixture(scope="module")
def bounded(tmp_path_factory):
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("bounded-home")
    tokens = add_users(home)
    settings = Settings(
        DRAFTSET_HOME=str(home),
        DRAFTSET_SQL_TIMEOUT_S=1.0,
        DRAFTSET_SQL_MAX_BYTES=50_000,
        DRAFTSET_MAX_BODY_BYTES=64_000,
    )
    running = serve_in_thread(settings)
    svc = Svc(running.url, home, tokens)
    svc.app = running.server.config.app  # type: ignore[attr-defined]
    yield svc
    running.stop()


def _no_statement_left(timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not catalog_sql._LIVE:
            return True
        time.sleep(0.05)
    return False


def test_a_viewers_endless_query_stops_at_its_time_limit(bounded):
    with bounded.api("viewer") as viewer:
        t0 = time.monotonic()
        resp = viewer.post("/api/sql", json={"query": ENDLESS})
        took = time.monotonic() - t0
    assert resp.status_code == 408, resp.text
    assert "time limit of 1 s" in resp.json()["error"] and resp.json()["next"]
    assert took < 3.0
    assert _no_statement_left()


def test_health_and_me_answer_while_viewers_run_endless_queries(bounded):
    bounded.tokens["viewer2"] = _add_user(bounded, "vic", "viewer")
    done: list[int] = []

    def slow(role: str) -> None:
        with bounded.api(role) as c:
            done.append(c.post("/api/sql", json={"query": ENDLESS}).status_code)

    threads = [threading.Thread(target=slow, args=(r,)) for r in ("viewer", "viewer2")]
    for t in threads:
        t.start()
    time.sleep(0.3)
    with bounded.api("reviewer") as reviewer:
        for _ in range(5):
            t0 = time.monotonic()
            assert reviewer.get("/health").status_code == 200
            assert reviewer.get("/api/me").json()["name"] == "rita"
            assert time.monotonic() - t0 < 0.5
    for t in threads:
        t.join(10)
    assert sorted(done) and set(done) <= {408, 503}  # stopped at the limit, or no slot freed within it


def _add_user(svc: Svc, name: str, role: str) -> str:
    with svc.api("operator") as op:
        return op.post("/api/users", json={"name": name, "role": role}).json()["token"]


def test_a_disconnected_clients_statement_is_interrupted(bounded):
    with bounded.api("operator") as op:  # staff: 30 s limit, so only the disconnect can stop it this soon
        with pytest.raises(httpx.ReadTimeout):
            op.post("/api/sql", json={"query": ENDLESS}, timeout=0.6)
    assert _no_statement_left(2.0)


def test_no_statement_form_writes_the_catalog(bounded):
    with bounded.api("operator") as op:
        before = op.post("/api/sql", json={"query": "SELECT count(*) FROM users"}).json()["rows"]
        for query in (
            "WITH gone AS (DELETE FROM users RETURNING *) SELECT count(*) FROM gone",
            "WITH x AS (UPDATE users SET role = 'operator' RETURNING *) SELECT * FROM x",
            "WITH x AS (INSERT INTO users (name, role, token_hash) VALUES ('m', 'operator', 'h') RETURNING *) "
            "SELECT * FROM x",
        ):
            resp = op.post("/api/sql", json={"query": query})
            assert resp.status_code == 400 and "read-only" in resp.json()["error"], resp.text
        after = op.post("/api/sql", json={"query": "SELECT count(*) FROM users"}).json()["rows"]
    assert before == after


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM users",
        "SELECT name FROM users WHERE token_hash LIKE 'a%'",
        "SELECT #3 FROM users",
        "SELECT COLUMNS('tok.*') FROM users",
        "SELECT * FROM query_table('users')",
        "SELECT u.* EXCLUDE (name) FROM users u",
        "SELECT * FROM pragma_storage_info('users')",
    ],
)
def test_viewers_cannot_read_token_hashes(bounded, query):
    with bounded.api("viewer") as viewer:
        resp = viewer.post("/api/sql", json={"query": query})
    assert resp.status_code == 400 and "only operators may read" in resp.json()["error"], resp.text
    with bounded.api("viewer") as viewer:
        names = viewer.post("/api/sql", json={"query": "SELECT name, role FROM users ORDER BY name"}).json()
    assert ["olga", "operator"] in names["rows"]


def test_answers_are_capped_by_bytes_and_rows(bounded):
    with bounded.api("viewer") as viewer:
        big = viewer.post("/api/sql", json={"query": "SELECT repeat('x', 1000) FROM range(1000)", "limit": 100000})
        many = viewer.post("/api/sql", json={"query": "SELECT i FROM range(500) t(i)", "limit": 10})
    assert big.status_code == 200 and big.json()["truncated_by"] == "bytes" and 0 < big.json()["row_count"] < 60
    assert len(big.content) <= 52_000
    assert many.json()["row_count"] == 10 and many.json()["truncated_by"] == "rows"


def test_bodies_are_capped_before_authentication_and_parse_errors_say_what_next(bounded):
    with httpx.Client(base_url=bounded.url, timeout=10) as anon:
        declared = anon.post("/api/sql", content=b"x" * 200_000, headers={"content-type": "application/json"})
        assert declared.status_code == 413 and "64,000-byte limit" in declared.json()["error"]

        def chunks():
            for _ in range(20):
                yield b"x" * 10_000

        streamed = anon.post("/api/sql", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413 and streamed.json()["next"]
        assert anon.get("/nowhere").json() == {"error": "no route GET /nowhere", "next": "see /docs for the routes"}
    with bounded.api("viewer") as viewer:
        broken = viewer.post("/api/sql", content=b"{not json", headers={"content-type": "application/json"})
        assert broken.status_code == 422 and set(broken.json()) == {"error", "next"}
        wrong = viewer.put("/api/sql", json={})
        assert wrong.status_code == 405 and set(wrong.json()) == {"error", "next"}


def test_expensive_routes_are_rate_limited_per_user(bounded):
    service = bounded.app.state.service
    saved, service.rates = service.rates, RateLimits({"sql": Rate(per_minute=6, burst=2), "find": Rate(6, 1)})
    try:
        with bounded.api("viewer") as viewer, bounded.api("reviewer") as reviewer:
            codes = [viewer.post("/api/sql", json={"query": "SELECT 1"}).status_code for _ in range(3)]
            assert codes == [200, 200, 429]
            limited = viewer.post("/api/sql", json={"query": "SELECT 1"})
            assert int(limited.headers["retry-after"]) >= 1 and "at most 6 a minute" in limited.json()["error"]
            assert reviewer.post("/api/sql", json={"query": "SELECT 1"}).status_code == 200  # per user
    finally:
        service.rates = saved


def test_sigterm_stops_the_service_within_seconds_with_its_statement_cancelled(tmp_path):
    home = tmp_path / "home"
    tokens = add_users(home)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DRAFTSET_HOME": str(home), "DRAFTSET_SQL_TIMEOUT_STAFF_S": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli.app", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        answers: list[httpx.Response | Exception] = []

        def slow() -> None:
            headers = {"Authorization": f"Bearer {tokens['operator']}"}
            try:
                answers.append(httpx.post(url + "/api/sql", json={"query": ENDLESS}, headers=headers, timeout=60))
            except httpx.HTTPError as exc:
                answers.append(exc)

        worker = threading.Thread(target=slow)
        worker.start()
        time.sleep(1.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
        assert time.monotonic() - t0 < 6.0
        worker.join(10)
        assert answers and isinstance(answers[0], httpx.Response) and answers[0].status_code == 503
        assert "shutting down" in answers[0].json()["error"]
        assert not (home / "service.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("secure", [True, False])
def test_session_cookies_are_secure_behind_tls(tmp_path, secure):
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path / "home"
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home), DRAFTSET_SECURE_COOKIES=secure))
    try:
        with httpx.Client(base_url=running.url, timeout=30) as browser:
            form = browser.get("/login")
            assert ("secure" in form.headers["set-cookie"].lower()) is secure
            # a client keeps a Secure cookie for https only: send it back by hand, as the TLS proxy would
            csrf = form.headers["set-cookie"].split(";")[0].split("=", 1)[1]
            login = browser.post(
                "/login",
                data={"token": tokens["reviewer"], "csrf_token": csrf},
                headers={"cookie": f"draftset_login_csrf={csrf}"},
            )
            session = next(c for c in login.headers.get_list("set-cookie") if c.startswith("draftset_session="))
            assert ("; secure" in session.lower()) is secure and "httponly" in session.lower()
    finally:
        running.stop()


@pytest.mark.parametrize(
    "query", ["SELECT 1; SELECT * FROM users", "SELECT name FROM users;\nSELECT token_hash FROM users"]
)
def test_one_statement_per_request_so_a_second_cannot_slip_past_the_checks(bounded, query):
    with bounded.api("viewer") as viewer:
        resp = viewer.post("/api/sql", json={"query": query})
    assert resp.status_code == 400 and "one statement per query: this one has 2" in resp.json()["error"], resp.text
    assert "token_hash" not in resp.json().get("columns", [])
