"""Per-record review state kept by the service, in Chromium and through the API: a reviewer marks records
reviewed, "reviewed N of M" is the server's (the same after a reload, in another reviewer's browser, and in
the API), the queue skips reviewed and flagged records, a search shows only the records that hold its text, and
a changed spec starts a fresh count."""

from __future__ import annotations

import pytest
from test_review_page_browser import DESKTOP, PHONE, SPLIT, _no_sideways_scroll, review_service  # noqa: F401
from test_service_browser import browser, login, shots  # noqa: F401 - fixtures shared with the service's browser tests

API = f"/api/adapters/{SPLIT}/reviews"


def _line(page) -> str:
    return page.inner_text("[data-testid=reviewed]")


def _current(page) -> str:
    return page.locator("article.record:visible").get_attribute("data-row")


def _queue(page, service) -> str:
    """Press u: the page goes to the server queue's next record after the one on screen (none reviewed or flagged)."""
    with service.api("viewer") as c:
        queued = c.get(API, params={"after": _current(page)}).json()["next_unreviewed"]
    assert queued is not None
    page.keyboard.press("u")
    page.wait_for_function(f"document.querySelector('article.record:not([hidden])').dataset.row == '{queued}'")
    return str(queued)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_marks_are_the_servers_and_the_queue_skips_them(browser, review_service, shots, viewport):  # noqa: F811
    with review_service.api("viewer") as c:
        before = c.get(API).json()
    page = login(browser, review_service, "reviewer")
    page.set_viewport_size(viewport)
    page.goto(f"{review_service.url}/adapters/{SPLIT}")
    assert _line(page) == before["line"]  # the page shows the server's count
    first = _queue(page, review_service)
    page.click("[data-testid=mark-reviewed]")
    n = len(set(before["reviewed"]) | {int(first)})
    page.wait_for_function(
        f"document.querySelector('[data-testid=reviewed]').textContent.startsWith('reviewed {n} of')"
    )
    assert page.locator(f"article.record[data-row='{first}'] [data-testid=record-reviewed]").inner_text() == (
        "reviewed by rita"
    )
    second = _queue(page, review_service)
    page.keyboard.press("r")
    page.wait_for_function(
        f"document.querySelector('[data-testid=reviewed]').textContent.startsWith('reviewed {n + 1} of')"
    )
    assert _no_sideways_scroll(page)
    shots(page, f"record-reviews-{viewport['width']}")
    page.reload()  # stored by the service, not the browser
    assert _line(page).startswith(f"reviewed {n + 1} of {before['total']}")
    with review_service.api("viewer") as c:
        after = c.get(API).json()
    assert {int(first), int(second)} <= set(after["reviewed"]) and after["reviewed_by"][first] == "rita"
    assert after["next_unreviewed"] not in after["reviewed"]
    page.close()


def test_a_viewer_reads_the_state_but_cannot_mark(browser, review_service):  # noqa: F811
    page = login(browser, review_service, "viewer")
    page.goto(f"{review_service.url}/adapters/{SPLIT}")
    assert page.locator("[data-testid=mark-reviewed]").count() == 0 and _line(page).startswith("reviewed ")
    with review_service.api("viewer") as c:
        spec = c.get(API).json()["spec_hash"]
        assert c.post(API, json={"spec_hash": spec, "row_index": 0}).status_code == 403
    page.close()


def test_a_mark_under_a_changed_spec_is_refused_and_taken_back_by_its_reviewer(review_service):  # noqa: F811
    with review_service.api("reviewer") as c:
        state = c.get(API).json()
        stale = c.post(API, json={"spec_hash": "0" * 64, "row_index": 3})
        assert stale.status_code == 400 and "spec changed since the page was loaded" in stale.json()["error"]
        marked = c.post(API, json={"spec_hash": state["spec_hash"], "row_index": 3}).json()
        assert 3 in marked["reviewed"]
        unmarked = c.post(API, json={"spec_hash": state["spec_hash"], "row_index": 3, "reviewed": False}).json()
        assert 3 not in unmarked["reviewed"]


def test_search_shows_only_the_records_that_hold_the_text(browser, review_service):  # noqa: F811
    with review_service.api("viewer") as c:
        record = c.get(f"/api/adapters/{SPLIT}?rows=20").json()
    raw = record["previews"][4]["raw"]
    word = next(w for w in str(raw).split() if len(w) > 6 and w.isalnum())  # a word from one sampled row
    holding = [
        p["row_index"] for p in record["previews"] if word.casefold() in str([p["raw"], p["canonical"]]).casefold()
    ]
    page = login(browser, review_service, "viewer")
    page.goto(f"{review_service.url}/adapters/{SPLIT}")
    page.fill("[data-testid=record-q]", word)
    with page.expect_navigation():
        page.click("[data-testid=record-search] button")
    shown = [int(r) for r in page.locator("article.record").evaluate_all("rs => rs.map(r => r.dataset.row)")]
    assert shown == holding and 4 in shown
    assert f"{len(holding)} of 20 sampled rows hold" in page.inner_text("[data-testid=record-matches]")
    with review_service.api("viewer") as c:
        assert c.get(API, params={"q": word}).json()["matches"] == holding
    page.fill("[data-testid=record-q]", "<b>no-such-text-anywhere</b>")
    with page.expect_navigation():
        page.click("[data-testid=record-search] button")
    assert page.locator("article.record").count() == 0 and page.locator("main b").count() == 0  # text, not markup
    page.close()
