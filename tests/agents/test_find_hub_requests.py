"""One find run asks the Hub about each repo once: counted at a local Hub that logs every request."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import pytest
from starlette.middleware.base import BaseHTTPMiddleware

from agents.configuration import FindConfig
from agents.run import FindRequest, run_find
from pipeline.servers.localhub import server
from tests.kits.find import make_env

FIXTURE_HUB = Path(__file__).parents[1] / "fixtures" / "hub"  # not imported from conftest: that would run it again
REPO_PATH = re.compile(r"^/(?:api/)?datasets/([^/]+/[^/]+)(/.*)?$")


@pytest.fixture()
def counting_hub(monkeypatch):
    """A local Hub over the fixture repos that counts requests per (repo, method, route)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    build = server.build_app

    def counted(root, **options):
        app = build(root, **options)

        async def count(request, call_next):
            path, dataset = request.url.path, request.query_params.get("dataset")
            if dataset:  # viewer routes: /viewer/info?dataset=owner/name, /viewer/first-rows?...
                seen[(dataset, request.method, path.rsplit("/", 1)[-1])] += 1
            elif m := REPO_PATH.match(path):
                route = re.sub(r"/resolve/[^/]+/", "/resolve/REV/", path.split(m.group(1), 1)[1])
                seen[(m.group(1), request.method, route)] += 1
            return await call_next(request)

        app.add_middleware(BaseHTTPMiddleware, dispatch=count)
        return app

    monkeypatch.setattr(server, "build_app", counted)
    running = server.serve_in_thread(FIXTURE_HUB, host="127.0.0.1", port=0)
    yield running.url, seen
    running.stop()


def test_each_repo_is_inspected_once_per_find_run(counting_hub, tmp_path):
    url, seen = counting_hub
    # No disk cache: before, every agent that met a repo fetched its card, viewer info and first rows again.
    final = asyncio.run(
        run_find(make_env(url, tmp_path), FindRequest("agentic coding", 100_000, FindConfig(cache=False)))
    )
    inspected = {repo for repo, _, route in seen if route == "info"}
    assert len(inspected) >= 15  # the agents did look at many repos
    repeated = {key: n for key, n in seen.items() if n > 1}
    assert not repeated, f"Hub asked more than once per run: {repeated}"
    # several agents met the same repos, and were answered from this run's memory
    assert final["state"]["summary"]["cache_hits"] > 0
