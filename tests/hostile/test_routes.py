"""Every attack of attacks.py into every parameter of every route of the real service (path segments,
query parameters, JSON and form fields), as an operator (the most a token may do).

What must hold: no 500 and no traceback, a JSON error is one line saying what next, an HTML page never
carries the attack's markup unescaped, and afterwards the service answers everyone as before."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest
from attacks import TEXT_ATTACKS
from fastapi.params import Form
from fastapi.routing import APIRoute

from catalog import Catalog
from pipeline.servers.service.users import add_user
from pipeline.settings import Settings

# Kept short for the route sweep: the decoders' test reads the long ones; here each is one request per field.
ROUTE_ATTACKS = {k: v[:5000] for k, v in TEXT_ATTACKS.items() if k != "empty"}
SKIP = {"/logout"}  # ends the session the sweep is using; covered by the page tests


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    from pipeline.servers.http import free_port
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("hostile-home")
    tokens = {"operator": add_user(Catalog(home), "olga", "operator")}
    dead_hub = f"http://127.0.0.1:{free_port()}"  # jobs and previews the sweep starts fail fast, offline
    server = serve_in_thread(Settings(DRAFTSET_HOME=str(home), HF_ENDPOINT=dead_hub, DRAFTSET_SQL_TIMEOUT_S=2.0))
    yield server, tokens
    server.stop()


def _routes() -> list[APIRoute]:
    """The routes of the two routers the app includes (app.py): the JSON API and the pages."""
    from pipeline.servers.service import api, pages

    return [r for r in (*api.router.routes, *pages.router.routes) if isinstance(r, APIRoute) and r.path not in SKIP]


def _requests(route: APIRoute, attack: str) -> list[tuple[str, str, dict]]:
    """(method, url, httpx kwargs): the attack in each path segment, each query parameter and each body field."""
    dep = route.dependant
    path = route.path
    for p in dep.path_params:
        path = path.replace("{" + p.name + "}", quote(attack, safe="") or "x")
    out = []
    for method in sorted(route.methods - {"HEAD"}):
        out.append((method, path, {}))
        for q in dep.query_params:
            out.append((method, path, {"params": {q.name: attack}}))
        forms = [b for b in dep.body_params if isinstance(b.field_info, Form)]
        if forms:
            out.append((method, path, {"data": {b.name: attack for b in forms}}))
        elif dep.body_params:
            fields = {}
            for b in dep.body_params:
                model = getattr(b.field_info.annotation, "model_fields", None)
                fields.update({name: attack for name in model} if model else {b.name: attack})
            out.append((method, path, {"json": fields}))
    return out


def _check(resp: httpx.Response, attack: str, where: str) -> None:
    assert resp.status_code < 500, f"{where}: {resp.status_code} {resp.text[:300]}"
    assert "Traceback" not in resp.text, where
    kind = resp.headers.get("content-type", "")
    if kind.startswith("application/json") and resp.status_code >= 400:
        error = resp.json().get("error")
        assert isinstance(error, str) and "\n" not in error, f"{where}: {error!r}"[:300]
    if kind.startswith("text/html") and "<script>" in attack:
        assert attack not in resp.text, f"{where}: the attack's markup is in the page unescaped"


@pytest.mark.parametrize("attack_name", list(ROUTE_ATTACKS))
def test_every_route_answers_every_attack_without_a_500(running, attack_name):
    server, tokens = running
    attack = ROUTE_ATTACKS[attack_name]
    headers = {"Authorization": f"Bearer {tokens['operator']}", "accept": "application/json"}
    routes = _routes()
    assert len(routes) > 20  # the sweep sees the whole app, not a handful
    with httpx.Client(base_url=server.url, headers=headers, timeout=30, follow_redirects=False) as client:
        for route in routes:
            for method, url, kwargs in _requests(route, attack):
                if method == "GET" and url.endswith("/events"):  # a stream that follows a job: read its head
                    with client.stream(method, url, **kwargs) as resp:
                        assert resp.status_code < 500
                    continue
                _check(
                    client.request(method, url, **kwargs), attack, f"{method} {route.path} {kwargs and list(kwargs)}"
                )
        assert client.get("/health").status_code == 200
        assert client.get("/api/me").json()["name"] == "olga"
        assert client.post("/api/sql", json={"query": "SELECT count(*) FROM users"}).status_code == 200
