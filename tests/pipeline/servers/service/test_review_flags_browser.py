"""Reviewers' flags end to end in Chromium: a reviewer flags a record on the adapter page, the flag is stored by
the service and shown after a reload, the verdict (page and CLI through the service) turns to `pass with
warnings`, approval is refused until the flag is resolved, then allowed. A viewer cannot flag, a cookie
request without the CSRF token is refused, and the note (hostile markup) is shown as text.
"""

from __future__ import annotations

import json
import re

import pytest
from service_kit import Svc, add_users
from test_service_browser import browser, login, shots  # noqa: F401 - fixtures shared with the service's browser tests
from typer.testing import CliRunner

from pipeline.cli.app import app
from pipeline.settings import Settings, settings

REPO = "swesmith-mini/swe-smith-trajectories-mini"  # passes; its guessed fields are checked in the fixture
DESKTOP, PHONE = {"width": 1400, "height": 1000}, {"width": 390, "height": 844}
NOTE = '<img src=x onerror="window.pwned=1"> turn 3 lost its text'


@pytest.fixture(scope="module")
def flag_service(hub_url, tmp_path_factory):
    from adapters.infer.infer import propose_adapter
    from adapters.review import review, store
    from catalog import Catalog
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("flags-home")
    cat = Catalog(home)
    spec = propose_adapter(REPO, endpoint=hub_url, viewer_base=hub_url + "/viewer", catalog=cat).spec
    store.save_spec(cat, spec)
    review.mark_checked(cat, REPO, list(spec.needs_review), "fixture")  # then the contract, on the final spec
    review.check_adapter(cat, REPO, endpoint=hub_url, rows=40)
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))
    yield Svc(running.url, home, tokens)
    running.stop()


@pytest.fixture()
def through_service(flag_service, monkeypatch):
    """The CLI in team mode as the reviewer: DRAFTSET_SERVER and DRAFTSET_TOKEN set."""

    def run(*args: str, ok: bool = True):
        monkeypatch.setenv("DRAFTSET_SERVER", flag_service.url)
        monkeypatch.setenv("DRAFTSET_TOKEN", flag_service.tokens["reviewer"])
        settings.cache_clear()
        result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
        settings.cache_clear()
        if ok:
            assert result.exit_code == 0, (result.output, result.exception)
        return result

    return run


def _verdict(page) -> str:
    return page.locator("[data-testid=verdict-kind]").inner_text()


def test_a_stored_flag_changes_the_verdict_blocks_approval_until_resolved(
    browser,  # noqa: F811 - the fixture, passed on
    flag_service,
    through_service,
    shots,  # noqa: F811
):
    page = login(browser, flag_service, "reviewer")
    page.goto(f"{flag_service.url}/adapters/{REPO}")
    assert _verdict(page) == "pass" and "No record flagged yet" in page.inner_text("[data-testid=flags]")

    page.keyboard.press("j")  # the second record, then flag it from the keyboard
    row = page.locator("article.record:visible").get_attribute("data-row")
    page.keyboard.press("f")
    assert page.evaluate("document.activeElement.id") == f"flag-kind-{row}"
    form = page.locator(f"article.record[data-row='{row}'] [data-testid=flag-form]")
    form.locator("[data-testid=flag-kind]").select_option("lost_text")
    form.locator("[data-testid=flag-note-input]").fill(NOTE)
    with page.expect_navigation():
        form.locator("[data-testid=flag-submit]").click()

    # After the reload: the stored flag, the same record on screen, the reviewed count kept, the verdict moved.
    assert page.locator("article.record:visible").get_attribute("data-row") == row
    assert page.inner_text("[data-testid=reviewed]").endswith("· flagged 1")  # the server's count
    assert _verdict(page) == "pass with warnings"
    line = page.inner_text("[data-testid=flag-problem]")
    assert f"1 record flagged by reviewers: lost_text ×1, e.g. row {row} lost_text" in line
    (stored,) = page.locator("[data-testid=flag-row]").all()
    assert stored.get_attribute("data-state") == "open"
    assert stored.locator("[data-testid=flag-note]").inner_text() == NOTE  # shown as text, never as markup
    assert page.locator("main img").count() == 0 and page.evaluate("window.pwned === undefined")
    flag_id = stored.get_attribute("data-flag")
    assert flag_id in page.inner_text("[data-testid=next]")
    page.set_viewport_size(PHONE)  # the flags table and forms hold on a phone: no page-wide sideways scroll
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shots(page, "review-flagged-phone")
    page.set_viewport_size(DESKTOP)

    # The CLI, through the service, reads the same verdict and the same stored flag.
    doc = json.loads(through_service("adapters", "flags", REPO, "--json").stdout)
    assert doc["verdict"]["kind"] == "pass with warnings" and [f["flag_id"] for f in doc["flags"]] == [flag_id]
    assert doc["flags"][0]["note"] == NOTE and doc["flags"][0]["flagged_by"] == "rita"
    refused = through_service("adapters", "approve", REPO, ok=False)
    assert refused.exit_code == 1 and "1 open reviewer flag" in str(refused.exception)

    # The page's Approve is disabled for the same reason, said beside it (resolving the flag below enables it).
    assert page.locator("[data-testid=approve]").is_disabled()
    assert f"flag {flag_id} open" in page.inner_text("[data-testid=approve-blocked]")

    resolve = page.locator(f"[data-testid=resolve-form][data-flag='{flag_id}']")
    resolve.locator("[data-testid=resolve-note]").fill("content key fixed upstream; this row reads right")
    with page.expect_navigation():
        resolve.locator("[data-testid=resolve]").click()
    assert _verdict(page) == "pass" and page.locator("[data-testid=flag-row]").get_attribute("data-state") == "resolved"
    assert "flagged 0" in page.inner_text("[data-testid=reviewed]")
    page.fill("[data-testid=approve-note]", "flag resolved")
    page.click("[data-testid=approve]")
    page.wait_for_url(re.compile(r".*\?done=approved"))
    assert page.locator("[data-testid=adapter-status]").inner_text() == "approved"
    page.close()


def test_a_viewer_cannot_flag_and_a_cookie_post_needs_the_csrf_token(browser, flag_service):  # noqa: F811
    viewer = login(browser, flag_service, "viewer")
    viewer.goto(f"{flag_service.url}/adapters/{REPO}")
    assert viewer.locator("[data-testid=flag-form]").count() == 0
    spec = viewer.locator("#records").get_attribute("data-spec")
    body = {"spec_hash": spec, "row_index": 0, "kind": "markup"}
    csrf = viewer.locator("meta[name=csrf-token]").get_attribute("content")
    denied = viewer.request.post(
        f"{flag_service.url}/api/adapters/{REPO}/flags", data=body, headers={"X-CSRF-Token": csrf}
    )
    assert denied.status == 403 and "reviewer role" in denied.json()["error"]
    viewer.close()

    reviewer = login(browser, flag_service, "reviewer")
    forged = reviewer.request.post(f"{flag_service.url}/api/adapters/{REPO}/flags", data=body)  # no CSRF header
    assert forged.status == 403 and "CSRF" in forged.json()["error"]
    with flag_service.api("reviewer") as c:  # a bearer client needs none; a spec that is gone is refused
        before = c.get(f"/api/adapters/{REPO}/flags").json()
        assert c.post(f"/api/adapters/{REPO}/flags", json={**body, "spec_hash": "0" * 16}).status_code == 400
        typo = c.post(f"/api/adapters/{REPO}/flags", json={**body, "kind": "lost_txt"})
        assert typo.status_code == 400 and "did you mean 'lost_text'" in typo.json()["error"]
        assert c.get(f"/api/adapters/{REPO}/flags").json() == before  # nothing refused was stored
        far = c.post(f"/api/adapters/{REPO}/flags", json={**body, "row_index": 25, "note": "cut"}).json()
    reviewer.goto(f"{flag_service.url}/adapters/{REPO}")  # 20 rows shown: the flag's link loads enough to show it
    with reviewer.expect_navigation():
        reviewer.click(f"[data-testid=flag-row][data-flag='{far['flag_id']}'] [data-row-link]")
    assert "rows=26" in reviewer.url and reviewer.locator("article.record:visible").get_attribute("data-row") == "25"
    assert reviewer.locator("article.record:visible [data-testid=record-flagged]").inner_text() == "flagged ×1"
    reviewer.close()
