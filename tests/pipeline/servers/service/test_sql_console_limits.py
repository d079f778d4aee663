"""Every SQL function under the console's time and memory limits, and a fair share of the console.

Real service on a thread (its memory is this process's), real statements: single function calls that
DuckDB cannot interrupt in-process (repeat, string_agg, list_sum over range) end with a named refusal
within the time limit, the service's own memory stays flat, and the next reviewer action is answered.
Four viewers looping slow statements cannot starve a fifth user.
"""

from __future__ import annotations

import resource
import threading
import time

import httpx
import pytest
from service_kit import Svc, add_users

from pipeline.settings import Settings

ENDLESS = "SELECT sum(i * i % 7) FROM range(100000000000000) t(i)"
# One call each: in-process these ran seconds past interrupt() and took GBs past memory_limit.
HEAVY_CALLS = [
    "SELECT length(repeat('x', 2000000000))",
    "SELECT length(repeat('xy', 300000000))",
    "SELECT length(string_agg('abcdefghij', '')) FROM range(300000000)",
    "SELECT length(list_sum(range(100000000))::VARCHAR)",
    "SELECT max(length(repeat(range::VARCHAR, 100000))) FROM range(100000)",
]


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("console-home")
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home), DRAFTSET_SQL_TIMEOUT_S=1.0))
    svc = Svc(running.url, home, tokens)
    yield svc
    running.stop()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("query", HEAVY_CALLS)
def test_one_expensive_function_call_is_refused_by_name_and_the_service_keeps_serving(console, query):
    before = _peak_rss_mb()
    with console.api("viewer") as viewer:
        t0 = time.monotonic()
        resp = viewer.post("/api/sql", json={"query": query})
        took = time.monotonic() - t0
    assert resp.status_code in (408, 413), resp.text
    error = resp.json()["error"]
    assert error.startswith("query stopped:") and ("memory" in error or "time limit of 1 s" in error), error
    assert resp.json()["next"]
    assert took < 2.5, took  # the time limit holds inside one call
    assert _peak_rss_mb() - before < 300  # the statement's memory was never the service's
    # the next actions of everyone are answered as before: a read, a write, a reviewer's action
    with console.api("reviewer") as reviewer, console.api("operator") as operator:
        assert reviewer.post("/api/sql", json={"query": "SELECT 42 AS x"}).json()["rows"] == [[42]]
        name = f"u{abs(hash(query)) % 10**6}"
        assert operator.post("/api/users", json={"name": name, "role": "viewer"}).status_code == 200
        seen = reviewer.post("/api/sql", json={"query": f"SELECT role FROM users WHERE name = '{name}'"}).json()
        assert seen["rows"] == [["viewer"]]  # the console reads the catalog as of now, the write included
        assert reviewer.post("/api/adapters/no/such/reject", json={"note": "x"}).status_code == 404


def test_a_query_within_the_limits_still_answers_in_full(console):
    with console.api("viewer") as viewer:
        resp = viewer.post("/api/sql", json={"query": "SELECT length(repeat('x', 1000000)) AS n", "limit": 5})
        rows = viewer.post("/api/sql", json={"query": "SELECT range FROM range(7)", "limit": 5}).json()
    assert resp.status_code == 200 and resp.json()["rows"] == [[1000000]]
    assert rows["row_count"] == 5 and rows["truncated_by"] == "rows"


def test_looping_viewers_cannot_starve_another_user(console):
    with console.api("operator") as operator:
        tokens = [
            operator.post("/api/users", json={"name": f"loop{i}", "role": "viewer"}).json()["token"] for i in range(4)
        ]
        light_token = operator.post("/api/users", json={"name": "lena", "role": "viewer"}).json()["token"]
    stop = threading.Event()
    codes: list[int] = []

    def loop(token: str) -> None:
        with httpx.Client(base_url=console.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
            while not stop.is_set():
                codes.append(c.post("/api/sql", json={"query": ENDLESS}).status_code)

    threads = [threading.Thread(target=loop, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    waits, answers = [], []
    try:
        time.sleep(4.5)  # each looper has run at least once, and they fill the slot and the queue
        with httpx.Client(
            base_url=console.url, headers={"Authorization": f"Bearer {light_token}"}, timeout=30
        ) as light:
            for _ in range(4):
                t0 = time.monotonic()
                answers.append(light.post("/api/sql", json={"query": "SELECT count(*) FROM users"}))
                waits.append(time.monotonic() - t0)
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    assert [r.status_code for r in answers] == [200] * 4, answers[-1].text
    # at most the one statement already running (1 s limit) ahead of it, never the four loopers' queue
    assert max(waits) < 1.8, waits
    assert set(codes) <= {408, 503} and 408 in codes
