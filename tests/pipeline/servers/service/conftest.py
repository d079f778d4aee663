"""The service under test: a real uvicorn server on a thread, on a fresh home, against the fixture Hub.

`service` (module scope) starts it with three users and one finished find run (which proposed adapters);
`api(role)` gives an httpx client holding that role's bearer token.
"""

from __future__ import annotations

import pytest
from service_kit import Svc, add_users

from pipeline.settings import Settings


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
