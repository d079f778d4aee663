"""Report: PNG plots, markdown and HTML under reports/<MIX>/ with the mix's real counts."""

from __future__ import annotations

import json
import random

import matplotlib.image as mpimg
import pytest
from typer.testing import CliRunner

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.io import write_json_atomic
from pipeline.cli.app import app
from pipeline.mix.run import run_mix

PLOTS = {
    "counts_by_source.png",
    "counts_by_category.png",
    "counts_by_mode.png",
    "prompt_tokens.png",
    "response_tokens.png",
    "dedup_yield_by_source.png",
    "target_vs_selected_by_category.png",
    "target_vs_selected_by_source.png",
}


def _words(seed: str, n: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(10**6)}" for _ in range(n))


@pytest.fixture()
def mix_home(home, sources):
    make, write = sources
    write(
        home,
        [make("lab/chat", i, _words(f"c{i}", 20), _words(f"a{i}", 60)) for i in range(12)]
        + [make("lab/chat", 99, _words("c0", 20))],
    )  # an exact duplicate of row 0
    write(home, [make("lab/tools", i, _words(f"t{i}", 80), category="tool <use>", mode="native") for i in range(5)])
    write_json_atomic(Home(home).normalized("lab/chat") / "stats.json", {"counts": {"in": 15, "out": 13}})
    run_mix(Catalog(home), home, "demo")
    return home


def test_report_writes_plots_markdown_and_html(mix_home):
    res = CliRunner().invoke(app, ["report", "demo"])
    assert res.exit_code == 0, res.output
    folder = mix_home / "reports" / "demo"
    assert {p.name for p in folder.glob("*.png")} == PLOTS
    for name in PLOTS:
        image = mpimg.imread(folder / name)
        assert image.shape[0] >= 250 and image.shape[1] >= 600  # a real, readable-size PNG
    md = (folder / "report.md").read_text()
    assert "| lab/chat | general chat | 13 | 12 | 1 | 0 | 0 | 0 | - | 12 | 12 | - | - | 0.87 |" in md
    # Figures against their reference, counts as words (never a raw dict), and the regenerate prompts the modes
    # table lists are the ones the response plot names.
    assert "- target 17 · selected 17 of 17\n" in md and "{" not in md
    assert "dropped_exact 1 · errors 0 · in 18 · out 17" in md
    assert "| response (kept answers; 12 to regenerate) | 5 |" in md
    assert "| regenerate | 12 |" in md and "| native | 5 |" in md
    assert "estimate:chars/4" in md and "![prompt_tokens](prompt_tokens.png)" in md
    # Which unit measured, and how many rows hit the length limits (0 here; a clipping tokenizer would pile up).
    assert "length limits (estimate:chars/4): 0 rows over max_prompt_tokens=16384, 0 under min_prompt_tokens=1" in md
    page = (folder / "report.html").read_text()
    # Hub-provided names are escaped, never markup.
    assert "tool &lt;use&gt;" in page and "tool <use>" not in page and page.count("<img ") == len(PLOTS)


def test_report_token_lengths_are_measured(mix_home):
    from eval.report.data import load_report_data

    data = load_report_data(mix_home, "demo")
    assert data.n_rows == 17 and len(data.prompt_tokens) == 17
    # chars/4 of 20 words "w<6 digits>" (~7.5 chars each) vs 80 words: the long prompts are longer.
    assert max(data.prompt_tokens) > 3 * min(data.prompt_tokens) > 0
    # The 12 lab/chat rows are regenerate prompts: their dataset answers are replaced, so they are not lengths.
    assert data.no_response == 12 and len(data.response_tokens) == 5
    assert data.yield_of("lab/chat") == pytest.approx(13 / 15) and data.yield_of("lab/tools") is None


def test_report_of_missing_mix_says_what_to_do(home):
    with pytest.raises(DraftsetError, match="no mix named 'nope'") as exc:
        from eval.report.page import write_report

        write_report(home, "nope")
    assert "draftset mix nope" in exc.value.hint


def test_manifest_feeds_the_summary(mix_home):
    from eval.report.page import write_report

    report = write_report(mix_home, "demo")
    manifest = json.loads((mix_home / "data" / "mix" / "demo" / "manifest.json").read_text())
    assert f"dedup run {manifest['dedup_run_id']}" in report.markdown.read_text()


def test_report_on_the_fixture_hub_mix(fixture_home):
    """End to end on real ingested fixture data: mix 300 records over all categories, then report."""
    from eval.report.data import load_report_data
    from eval.report.page import write_report
    from tests.fixtures.expected import EXPECTED

    home, _ = fixture_home
    result = run_mix(Catalog(home), home, "fixture-300", samples=300)
    manifest = result.manifest
    assert manifest["samples_selected"] == 300
    assert set(manifest["sources"]) == {r for r, e in EXPECTED.items() if e.records}
    report = write_report(home, "fixture-300")
    md = report.markdown.read_text()
    for repo, entry in manifest["sources"].items():
        assert f"| {repo} | {entry['category']} | {entry['ingested']} |" in md
    assert "| native |" in md and "| regenerate |" in md
    assert {p.name for p in report.plots} == PLOTS
    data = load_report_data(home, "fixture-300")
    # Regenerate prompts carry no answer yet and stay out of the response histogram.
    assert data.no_response > 0 and len(data.response_tokens) + data.no_response == 300
    # Every figure reconciles on the real mix: source targets and selections sum to the mix's, each category's
    # figures are its sources', and the summary states them against their reference.
    f = data.figures
    assert f.target == 300 and f.selected == 300 == sum(s.selected for s in f.sources)
    assert f.target - f.unmet == f.selected and sum(s.target for s in f.sources) - f.passed_on + f.taken_up == 300
    assert {c: n for c, (_, n) in f.by_category().items()} == dict(data.by_category)
    assert f"- {f.summary()}\n" in md and "{" not in md
    assert f"{data.by_mode['regenerate']:,} to regenerate" in md
    assert len(data.response_tokens) >= data.by_mode["native"]
