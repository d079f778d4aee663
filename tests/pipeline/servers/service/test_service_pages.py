"""The pages over plain HTTP: catalog filters, untrusted text printed as text, logins that lead nowhere else."""

from __future__ import annotations

import re
from contextlib import closing

import httpx

from catalog import Catalog

HOSTILE = '<script>alert("card")</script><img src=x onerror=alert(1)>'


def _session(service, role: str) -> httpx.Client:
    browser = service.api(None)
    browser.get("/login")
    resp = browser.post(
        "/login",
        data={
            "token": service.tokens[role],
            "next": "//evil.example/x",
            "csrf_token": browser.cookies["draftset_login_csrf"],
        },
    )
    assert resp.status_code == 303 and resp.headers["location"] == "/"  # never an open redirect
    return browser


def test_catalog_filters_and_card_text_is_escaped(service, found):
    # The service owns the catalog in this process: the test writes through it like any stage would.
    Catalog(service.home).upsert(
        "candidates",
        [
            {
                "repo_id": "evil-org/xss-card",
                "category": "chat",
                "score": 0.99,
                "status": "relevant",
                "card_summary": HOSTILE,
                "license": "<b>mit</b>",
                "flags": ["<i>flag</i>"],
            }
        ],
    )
    with closing(_session(service, "viewer")) as browser:
        page = browser.get("/", params={"category": "chat"}).text
        # The card reads as plain words (markup dropped, catalog.untrusted.card_text), and those words escaped
        assert HOSTILE not in page and "<script>alert" not in page and ">alert(&#34;card&#34;)</td>" in page
        assert "<b>mit</b>" not in page and "&lt;i&gt;flag&lt;/i&gt;" in page
        rows = page.split('data-testid="candidates"', 1)[1]
        assert "evil-org/xss-card" in rows and ">agentic<" not in rows  # only the chosen category
        assert "hours" in page and re.search(r"\d [GT]B\b", page)  # the plan with its cost, in the CLI's units
        api = browser.get("/api/candidates", params={"q": "xss", "min_score": 0.5}).json()
        assert [c["repo_id"] for c in api] == ["evil-org/xss-card"] and api[0]["card_summary"] == HOSTILE


def test_pages_need_a_login_and_errors_are_pages(service, found):
    with service.api(None) as anon:
        resp = anon.get("/adapters", headers={"Accept": "text/html"})
        assert resp.status_code == 303 and resp.headers["location"] == "/login?next=/adapters"
    with closing(_session(service, "viewer")) as browser:
        missing = browser.get("/adapters/nobody/nothing", headers={"Accept": "text/html"})
        assert missing.status_code == 404 and "no adapter for nobody/nothing" in missing.text
        assert "next:" in missing.text
        refused = browser.post("/find", data={"domain": "x", "csrf_token": "wrong"}, headers={"Accept": "text/html"})
        assert refused.status_code == 403
