"""The service under test: a real uvicorn server on a thread, on a fresh home, against the fixture Hub.

`service` (module scope) starts it with three users and one finished find run (which proposed adapters);
`api(role)` gives an httpx client holding that role's bearer token.
"""

from __future__ import annotations

import time

import httpx
import pytest

from catalog import Catalog
from pipeline.settings import Settings


class Svc:
    def __init__(self, url: str, home, tokens: dict[str, str]):
        self.url, self.home, self.tokens = url, home, tokens

    def api(self, role: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def wait_job(self, job_id: str, timeout_s: float = 120) -> dict:
        deadline = time.monotonic() + timeout_s
        with self.api("viewer") as c:
            while time.monotonic() < deadline:
                job = c.get(f"/api/jobs/{job_id}").json()
                if job["status"] in ("ok", "failed", "interrupted"):
                    return job
                time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish in {timeout_s} s")


def add_users(home) -> dict[str, str]:
    from pipeline.servers.service.users import add_user

    cat = Catalog(home)
    return {role: add_user(cat, name, role) for name, role in
            (("vera", "viewer"), ("rita", "reviewer"), ("olga", "operator"))}


@pytest.fixture(scope="module")
def service(hub_url, tmp_path_factory):
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("service-home")
    tokens = add_users(home)  # before the service starts: then it owns the catalog
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))
    svc = Svc(running.url, home, tokens)
    yield svc
    running.stop()


@pytest.fixture(scope="module")
def found(service):
    """One finished find run through the API (it proposes adapters for the top 2 planned datasets)."""
    with service.api("operator") as c:
        resp = c.post("/api/find", json={"domain": "agentic coding", "samples": 1000, "propose": 2})
    assert resp.status_code == 200, resp.text
    job = service.wait_job(resp.json()["job_id"])
    assert job["status"] == "ok", job
    return job
