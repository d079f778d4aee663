"""Page sessions live as long as the token they logged in with, as bearer tokens do: `users remove` and a
new token (`--replace`, a new role) end them at the next request, never carried over to a later token of
the same name, and page forms spend the API's rate limits."""

from __future__ import annotations

import re

import httpx
import pytest
from service_kit import Svc, add_users

from pipeline.settings import Settings


@pytest.fixture()
def svc(tmp_path):
    from pipeline.servers.service.server import serve_in_thread

    tokens = add_users(tmp_path)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(tmp_path)))
    yield Svc(running.url, tmp_path, tokens)
    running.stop()


def _login(svc: Svc, token: str) -> tuple[httpx.Client, str]:
    browser = svc.api(None)
    browser.get("/login")
    resp = browser.post(
        "/login", data={"token": token, "next": "/", "csrf_token": browser.cookies["draftset_login_csrf"]}
    )
    assert resp.status_code == 303, resp.text
    page = browser.get("/find")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert page.status_code == 200 and csrf, page.text[:300]
    return browser, csrf.group(1)


def _reject(browser: httpx.Client, csrf: str) -> httpx.Response:
    return browser.post("/adapters/no/such/reject", data={"csrf_token": csrf, "note": "x"})


def test_users_remove_ends_a_page_session_at_once(svc):
    browser, csrf = _login(svc, svc.tokens["reviewer"])
    assert browser.get("/api/me").json() == {"name": "rita", "role": "reviewer"}
    assert _reject(browser, csrf).status_code == 404  # allowed: only the adapter is missing
    with svc.api("operator") as op:
        assert op.delete("/api/users/rita").status_code == 200
    me = browser.get("/api/me")
    assert me.status_code == 401 and "access was removed" in me.json()["error"]
    assert _reject(browser, csrf).status_code in (303, 401)  # to the login page, never through
    page = browser.get("/adapters", headers={"accept": "text/html"})
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    with svc.api("operator") as op:  # added again: the old session stays ended (it was dropped)
        op.post("/api/users", json={"name": "rita", "role": "reviewer"})
    assert browser.get("/api/me").status_code == 401


def test_a_new_token_and_role_end_the_old_tokens_session_and_the_new_token_logs_in(svc):
    browser, csrf = _login(svc, svc.tokens["reviewer"])
    assert _reject(browser, csrf).status_code == 404
    with svc.api("operator") as op:
        new = op.post("/api/users", json={"name": "rita", "role": "viewer", "replace": True})
        assert new.status_code == 200, new.text
    me = browser.get("/api/me")  # the old token is revoked: its session with it, whatever the role now
    assert me.status_code == 401 and "token replaced" in me.json()["error"]
    assert _reject(browser, csrf).status_code in (303, 401)
    browser, csrf = _login(svc, new.json()["token"])
    assert browser.get("/api/me").json() == {"name": "rita", "role": "viewer"}
    refused = _reject(browser, csrf)
    assert refused.status_code == 403 and "reviewer role" in refused.text
    assert browser.get("/adapters").status_code == 200  # what a viewer may do still works


def test_an_idle_session_never_passes_to_a_later_token_of_the_same_name(svc):
    """Removed and added again while the session made no request (a leaked token's session, idle): the
    session belonged to the revoked token, so the new rita's authority is not its to use."""
    browser, _ = _login(svc, svc.tokens["reviewer"])
    with svc.api("operator") as op:
        assert op.delete("/api/users/rita").status_code == 200
        assert op.post("/api/users", json={"name": "rita", "role": "reviewer"}).status_code == 200
    me = browser.get("/api/me")
    assert me.status_code == 401 and "access was removed" in me.json()["error"], me.text


def test_page_forms_spend_the_same_rate_limit_as_the_api(svc):
    from pipeline.servers.service.ratelimit import RATES

    browser, csrf = _login(svc, svc.tokens["reviewer"])
    burst = RATES["test"].burst
    with svc.api("reviewer") as api:  # the bearer client spends the whole burst
        codes = [api.post("/api/adapters/no/such/test").status_code for _ in range(burst)]
    assert 429 not in codes, codes
    form = browser.post("/adapters/no/such/test", data={"csrf_token": csrf})
    assert form.status_code == 429 and "too many test requests from rita" in form.text
