"""The adapter review page in Chromium at desktop (1280x900) and phone (390x844) sizes: one verdict first,
records one by one with raw and canonical turns paired, filters, flags and keys, and a decision that stays
on screen. Positions are measured in the page (getBoundingClientRect), so "reachable" is a number, not a look.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from service_kit import add_users
from test_service_browser import browser, login, shots  # noqa: F401 - fixtures shared with the service's browser tests

from pipeline.settings import Settings

WEIRD = "weird-roles/customer-support-chats"  # an unmapped label: the contract fails, turns are dropped
SPLIT = "swesmith-mini/swe-smith-trajectories-mini"  # passes, with the split a guess (an open REVIEW item)
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def review_service(hub_url, tmp_path_factory):
    from service_kit import Svc

    from adapters.infer.infer import propose_adapter
    from adapters.review import review, store
    from catalog import Catalog
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("review-home")
    cat = Catalog(home)
    for repo in (WEIRD, SPLIT):
        store.save_spec(cat, propose_adapter(repo, endpoint=hub_url, viewer_base=hub_url + "/viewer", catalog=cat).spec)
        review.check_adapter(cat, repo, endpoint=hub_url, rows=60)
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))
    yield Svc(running.url, home, tokens)
    running.stop()


def _box(page, selector: str) -> dict:
    return page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, right: r.right, bottom: r.bottom}; }"
    )


def _inside(box: dict, viewport: dict) -> bool:
    return box["x"] >= 0 and box["y"] >= 0 and box["right"] <= viewport["width"] and box["bottom"] <= viewport["height"]


def _no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def _open(browser, service, role: str, viewport: dict, repo: str):  # noqa: F811 - the fixture, passed on
    page = login(browser, service, role)
    page.set_viewport_size(viewport)
    page.goto(f"{service.url}/adapters/{repo}")
    return page


def test_desktop_verdict_first_then_accounting_then_records_one_by_one(browser, review_service, shots):  # noqa: F811
    page = _open(browser, review_service, "reviewer", DESKTOP, WEIRD)
    assert page.locator("h1").count() == 1 and WEIRD in page.locator("h1").inner_text()
    assert page.locator("[data-testid=verdict-kind]").inner_text() == "fail"
    problems = page.locator("[data-testid=problems] li").all_inner_texts()
    assert any("roles_mapped" in p and "supervisor_note" in p for p in problems), problems
    assert any("role_map.supervisor_note" in p for p in problems)  # the open REVIEW item, once
    assert "then approve" not in page.inner_text("[data-testid=verdict]")
    order = [_box(page, f"[data-testid={t}]")["y"] for t in ("verdict", "decide", "accounting", "contract", "records")]
    assert order == sorted(order), order
    assert _inside(_box(page, "[data-testid=approve]"), DESKTOP) and _inside(
        _box(page, "[data-testid=reject]"), DESKTOP
    )

    visible = page.locator("article.record:visible")
    assert visible.count() == 1 and "raw row 0" in visible.inner_text()
    assert re.search(r"\b(USER|SYSTEM)\b", visible.locator(".pair.kept").first.inner_text())
    page.select_option("[data-testid=record-filter]", "quarantined")  # rows with the unmapped label
    refused = page.locator("article.record:visible")
    assert refused.get_attribute("data-quarantined") == "1" and "row refused" in refused.inner_text()
    dropped = refused.locator(".pair.dropped").all_inner_texts()
    assert any("'supervisor_note' is not in the role map" in d for d in dropped), dropped
    page.select_option("[data-testid=record-filter]", "all")
    page.keyboard.press("j")
    assert "2 of" in page.inner_text("[data-testid=record-pos]")
    page.keyboard.press("f")  # focuses this record's flag form (flags are stored: test_review_flags_browser.py)
    assert page.evaluate("document.activeElement.id") == "flag-kind-" + page.locator(
        "article.record:visible"
    ).get_attribute("data-row")
    page.keyboard.press("Escape")  # out of the flag form: the keys move between records again
    assert page.evaluate("document.activeElement.tagName") == "BODY"
    assert page.inner_text("[data-testid=reviewed]") == "reviewed 0 of 20 · flagged 0"  # looking is not reviewing
    page.keyboard.press("k")
    assert "1 of" in page.inner_text("[data-testid=record-pos]")
    page.select_option("[data-testid=record-filter]", "failing")  # no check names a row here: said, not blank
    assert page.locator("article.record:visible").count() == 0
    assert page.inner_text("[data-testid=record-pos]") == "no row matches this filter"
    page.select_option("[data-testid=record-filter]", "longest")
    lengths = page.eval_on_selector_all("article.record", "els => els.map(e => +e.dataset.length)")
    assert int(page.locator("article.record:visible").get_attribute("data-length")) == max(lengths)
    assert _no_sideways_scroll(page)
    for field in ("approve-note", "record-filter"):  # every input has a label
        assert page.locator(f"label[for={page.get_attribute(f'[data-testid={field}]', 'id')}]").count() == 1
    shots(page, "review-desktop")
    page.close()


@pytest.fixture()
def screen(tmp_path) -> Path:
    folder = Path(os.environ.get("DRAFTSET_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_phone_keeps_the_decision_on_screen_and_approves_a_checked_item(browser, review_service, shots, screen):  # noqa: F811
    page = _open(browser, review_service, "reviewer", PHONE, SPLIT)
    assert _no_sideways_scroll(page)
    assert _inside(_box(page, "header button.link"), {"width": PHONE["width"], "height": 10_000})  # log out
    for where in ("top", "bottom"):
        if where == "bottom":
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        for control in ("approve", "reject", "approve-note"):
            box = _box(page, f"[data-testid={control}]")
            assert _inside(box, PHONE), (where, control, box)
    assert page.locator("[data-testid=verdict-kind]").inner_text() == "pass"
    assert "source.split" in page.inner_text("[data-testid=verdict]")
    shots(page, "review-phone")
    page.screenshot(path=str(screen / "review-phone-screen.png"))  # what the phone shows, the pinned bar included
    # The REVIEW items are open: Approve is disabled, and the page says why and what enables it.
    assert page.locator("[data-testid=approve]").is_disabled()
    blocked = page.inner_text("[data-testid=approve-blocked]")
    assert "REVIEW open: source.split" in blocked and "Tick each item" in blocked
    # A page that still sends it (an old tab, a script) is refused on this page, beside the form, not a dead end.
    page.evaluate("document.querySelector('[data-testid=approve]').disabled = false")
    page.click("[data-testid=approve]")
    page.wait_for_url(re.compile(r".*/adapters/.*\?refused=.*"))
    assert "open REVIEW item" in page.inner_text("[data-testid=refused]")
    assert page.locator("[data-testid=approve-form]").count() == 1 and _no_sideways_scroll(page)
    boxes = page.locator("[data-testid=checked]")
    assert boxes.count() >= 1  # source.split, and the category (no find ran here)
    for i in range(boxes.count()):
        boxes.nth(i).check()
        assert page.locator("[data-testid=approve]").is_disabled() == (i < boxes.count() - 1)
    page.fill("[data-testid=approve-note]", "split checked against the card")
    page.click("[data-testid=approve]")
    page.wait_for_url(re.compile(r".*\?done=approved"))
    assert page.locator("[data-testid=adapter-status]").inner_text() == "approved"
    assert page.locator("[data-testid=verdict-kind]").inner_text() == "pass" and _no_sideways_scroll(page)
    shots(page, "review-phone-approved")
    page.close()
