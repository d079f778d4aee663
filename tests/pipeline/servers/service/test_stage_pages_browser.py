"""The stages, job and report pages in Chromium at desktop (1280x900) and phone (390x844) sizes: an operator
starts a stage from its form (a refusal shows beside it), watches its stage runs' counts, resumes a cut-off job;
a viewer reads the report, where Hub text is text and the page never pans sideways."""

from __future__ import annotations

import re

import pytest
from test_service_browser import browser, login, shots  # noqa: F401 - fixtures shared with the service's browser tests
from test_stage_jobs import HOSTILE, run_ok, svc  # noqa: F401 - the stage service fixture

from catalog import Catalog

DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}
KINDS = ["ingest", "mix", "regenerate", "build", "capture", "train", "check", "report"]


@pytest.fixture(scope="module")
def reported(svc):  # noqa: F811
    """Mix `m` and its report, written by jobs of the service."""
    run_ok(svc, "mix", {"name": "m", "settings": {"samples": 40, "seed": 3}})
    return run_ok(svc, "report", {"mix": "m"})


def _open(browser, svc, role: str, viewport: dict, path: str):  # noqa: F811 - the fixture, passed on
    page = login(browser, svc, role)
    page.set_viewport_size(viewport)
    page.goto(svc.url + path)
    return page


def _no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_an_operator_starts_a_mix_from_its_form_and_watches_its_stage_runs(browser, svc, shots, viewport):  # noqa: F811
    page = _open(browser, svc, "operator", viewport, "/stages")
    assert [page.locator(f"[data-testid=stage-{k}] h2").inner_text() for k in KINDS] == KINDS
    assert _no_sideways_scroll(page)
    form = page.locator("form.stage-form[data-kind=mix]")
    form.locator("input[name=name]").fill(f"m{viewport['width']}")  # a new mix at each size: none is reused
    form.locator("input[name=weights]").fill('{"general chta": 1}')
    form.locator("button[type=submit]").click()
    error = form.locator(".form-error")
    error.wait_for(state="visible")
    assert "did you mean 'general chat'" in error.inner_text() and page.url.endswith("/stages")  # refused in place
    box = error.evaluate("e => { const r = e.getBoundingClientRect(); return {x: r.left, right: r.right}; }")
    assert box["x"] >= 0 and box["right"] <= viewport["width"]
    shots(page, f"stages-refused-{viewport['width']}")
    form.locator("input[name=weights]").fill("")
    form.locator("textarea[name=settings]").fill('{"samples": 40}')
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r".*/jobs/mix-.*"))
    page.wait_for_function(
        "document.querySelector('[data-testid=job-status]').textContent.trim() == 'ok'", timeout=120_000
    )
    runs = {
        r.locator("td[data-label=stage]").inner_text(): r.locator("td[data-label=out]").inner_text()
        for r in page.locator("#runs tbody tr").all()
    }
    assert runs["mix"] == "40" and "dedup" in runs, runs  # the stages' own counts, on the page
    assert "selected 40 of 40" in page.locator("[data-testid=job-result]").inner_text()
    assert _no_sideways_scroll(page)
    shots(page, f"stage-mix-job-{viewport['width']}")


def test_a_viewer_sees_the_stages_but_cannot_start_one(browser, svc):  # noqa: F811
    page = _open(browser, svc, "viewer", DESKTOP, "/stages")
    assert page.locator("[data-testid=operator-only]").is_visible()
    assert page.locator("form.stage-form").count() == 0


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_viewer_reads_the_report_with_hub_text_as_text(browser, svc, reported, shots, viewport):  # noqa: F811
    page = _open(browser, svc, "viewer", viewport, "/reports")
    page.click("a[href='/reports/m']")
    page.wait_for_url(svc.url + "/reports/m")
    tables = page.locator("[data-testid=report-table]")
    assert tables.count() >= 4
    assert HOSTILE in tables.first.inner_text()  # the category shown as the text it is
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0  # never made markup
    plots = page.locator(".plots img")
    assert plots.count() >= 3
    page.wait_for_function("[...document.querySelectorAll('.plots img')].every(i => i.complete && i.naturalWidth > 0)")
    assert _no_sideways_scroll(page)
    widest = page.evaluate(
        "Math.max(...[...document.querySelectorAll('.plots img')].map(i => i.getBoundingClientRect().right))"
    )
    assert widest <= viewport["width"]
    shots(page, f"report-{viewport['width']}")


def test_only_the_plots_a_report_lists_are_served(svc, reported):  # noqa: F811
    with svc.api("viewer") as c:
        assert c.get("/reports/m/plots/report.json").status_code == 404
        assert c.get("/reports/m/plots/..%2F..%2Fcatalog.duckdb").status_code == 404
        assert c.get("/reports/nosuch").status_code == 404
    with svc.api(None) as c:
        assert c.get("/reports/m", headers={"Accept": "application/json"}).status_code == 401


def test_an_operator_resumes_an_interrupted_job_from_its_page(browser, svc):  # noqa: F811
    Catalog(svc.home).upsert(  # as a killed service leaves it (the service's own connection, in this process)
        "service_jobs",
        [
            {
                "job_id": "mix-cut-off",
                "kind": "mix",
                "params": {"name": "m2", "settings": {"samples": 10}},
                "status": "interrupted",
                "started_by": "olga",
                "error": "the service stopped while this job ran",
            }
        ],
    )
    viewer = _open(browser, svc, "viewer", PHONE, "/jobs/mix-cut-off")
    assert viewer.locator("[data-testid=resume]").count() == 0  # operators resume
    page = _open(browser, svc, "operator", PHONE, "/jobs/mix-cut-off")
    page.locator("[data-testid=resume] button").click()
    page.wait_for_url(re.compile(r".*/jobs/mix-2.*"))
    page.wait_for_function(
        "document.querySelector('[data-testid=job-status]').textContent.trim() == 'ok'", timeout=120_000
    )
    assert "selected 10 of 10" in page.locator("[data-testid=job-result]").inner_text()
    assert _no_sideways_scroll(page)


def test_a_running_stage_shows_its_counts_live(browser, tmp_path):  # noqa: F811
    """While a regenerate job runs (a slow target), its stage run's row is on the job page from the live events,
    before the job ends and the page reloads with the result."""
    from service_kit import Svc, add_users

    from pipeline.servers.service.server import serve_in_thread
    from pipeline.settings import Settings
    from tests.kits.fake_openai import Behaviour, RunningServer
    from tests.pipeline.conftest import make_conv, write_source

    target = RunningServer(Behaviour(reply_words=4, latency_s=3.0))
    home = tmp_path / "home"
    write_source(home, [make_conv("acme/ask", i, f"please answer question {i}") for i in range(6)])
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home), DRAFTSET_TARGET_ENDPOINTS=[target.url]))
    try:
        svc = Svc(running.url, home, tokens)
        run_ok(svc, "mix", {"name": "slow", "settings": {"samples": 6}})
        page = _open(browser, svc, "operator", PHONE, "/stages")
        form = page.locator("form.stage-form[data-kind=regenerate]")
        form.locator("input[name=mix]").fill("slow")
        form.locator("button[type=submit]").click()
        page.wait_for_url(re.compile(r".*/jobs/regenerate-.*"))
        live = page.locator("#runs tbody tr td[data-label=stage]:has-text('regenerate')")
        live.wait_for(timeout=20_000)
        assert page.inner_text("[data-testid=job-status]").strip() == "running"  # drawn before the end
        page.wait_for_function(
            "document.querySelector('[data-testid=job-status]').textContent.trim() == 'ok'", timeout=120_000
        )
        row = page.locator("#runs tbody tr").filter(has_text="regenerate")
        assert row.locator("td[data-label=out]").inner_text() == "6"
        assert _no_sideways_scroll(page)
    finally:
        running.stop()
        target.stop()
