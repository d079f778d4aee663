"""The data forecast: a log-linear fit of measured accept lengths, its band, and what it says it cannot know."""

from __future__ import annotations

import dataclasses
import math

import pytest

from agents.forecast import REFERENCE, Cost, Point, Z, fit, line, measured_points

# two points of the 2026-12-01 SmolLM2 runs: the arithmetic below is checked against them by hand
TWO = [Point(6000, 2.033), Point(24000, 2.422)]


def test_two_points_give_the_line_through_them_and_a_band_from_their_errors():
    f = fit(TWO, steps=3)
    assert f is not None and f.n_points == 2
    assert f.predict(6000)[0] == pytest.approx(2.033, abs=1e-6) and f.predict(24000)[0] == pytest.approx(2.422)
    slope = (2.422 - 2.033) / math.log(4)
    mean, half = f.predict(96000)
    assert mean == pytest.approx(2.422 + slope * math.log(4)) and half > f.predict(24000)[1]  # wider outside
    central, optimistic, pessimistic = f.samples_for(2.6)
    assert central == pytest.approx(24000 * math.exp((2.6 - 2.422) / slope), rel=1e-3)
    assert optimistic < central < pessimistic


def test_the_sentence_says_when_it_extrapolates_and_what_the_data_costs():
    f = fit(TWO, steps=3)
    cost = Cost(
        tokens_per_sample=1000, response_tokens_per_sample=800, throughput_tok_s=800, hidden_bytes_per_token=1000
    )
    inside = line(f, 12000, 2.6, cost)
    assert "within the measured 6,000-24,000" in inside and "for AL 2.6 you need ~45," in inside
    assert (
        "regeneration 12.6 h, hidden states 45.3 GB" in inside and "or 0 online" in inside and "extrapolated" in inside
    )
    assert "extrapolating: measured 6,000-24,000" in line(f, 200000, 2.6)
    assert "not reachable" in line(f, 12000, 4.5) and "ceiling" in line(f, 12000, 4.5)


def test_flat_or_noisy_points_forecast_nothing_from_data():
    flat = fit([Point(1000, 2.0), Point(4000, 1.98), Point(16000, 2.01)], steps=3)
    assert flat is not None and "no gain from data" in line(flat, 8000, 2.5)
    noisy = fit([Point(1000, 1.5, 0.01), Point(4000, 2.5, 0.01), Point(16000, 2.0, 0.01)], steps=3)
    tight = fit([Point(1000, 1.5, 0.01), Point(4000, 1.75, 0.01), Point(16000, 2.0, 0.01)], steps=3)
    assert noisy.predict(8000)[1] > 5 * tight.predict(8000)[1]  # scatter beyond the errors widens the band
    assert fit([Point(1000, 2.0), Point(1000, 2.1)], steps=3) is None  # one sample count: no slope


def test_predictions_stay_within_what_a_chain_can_accept():
    f = fit(TWO, steps=3)
    assert f.predict(10)[0] == 1.0 and f.predict(10**12)[0] == 4.0
    assert "(the chain's ceiling)" in line(f, 10**12, 3.5)


def test_a_recipe_aware_fit_recovers_known_coefficients_from_points_with_varied_steps():
    a, b, c = -0.3, 0.18, 0.12
    grid = [(s, t) for s in (3000, 9000, 27000) for t in (500, 2000, 8000)]
    pts = [Point(s, a + b * math.log(s) + c * math.log(t), 0.05, train_steps=t) for s, t in grid]
    f = fit(pts, steps=3)
    assert f is not None and f.recipe_aware and f.fallback is None
    assert (f.a, f.b, f.c) == pytest.approx((a, b, c), abs=1e-9)
    assert f.predict(9000, 8000)[0] > f.predict(9000, 500)[0]  # more steps, same data: higher
    assert "optimizer steps" in line(f, 9000, 2.5)


def test_the_sentence_says_which_optimizer_steps_it_assumed():
    """The recipe's steps when the caller knows them (the prediction moves with them), else the points' typical."""
    a, b, c = -0.3, 0.18, 0.12
    grid = [(s, t) for s in (3000, 9000, 27000) for t in (500, 2000, 8000)]
    f = fit([Point(s, a + b * math.log(s) + c * math.log(t), 0.05, train_steps=t) for s, t in grid], steps=3)
    assert f is not None and f.recipe_aware
    known, unknown = line(f, 9000, 2.5, train_steps=8000), line(f, 9000, 2.5)
    assert "at this run's 8,000 optimizer steps" in known and "typical" not in known
    assert "(the points' typical: this run's steps are not known)" in unknown
    assert f"expect AL {f.predict(9000, 8000)[0]:.2f}" in known and f"expect AL {f.predict(9000)[0]:.2f}" in unknown
    assert f.samples_for(2.5, 8000)[0] < f.samples_for(2.5, 500)[0]  # more steps a run: fewer samples for the same AL
    flat = fit([Point(s, 1.0 + 0.2 * math.log(s), 0.05, train_steps=s // 40) for s in (4000, 8000, 16000)], steps=3)
    assert "samples only" in line(flat, 8000, 2.5, train_steps=4000)  # a fit without steps ignores them, and says so


def test_one_recipe_s_points_are_collinear_and_fall_back_to_samples_only_saying_why():
    # steps in proportion to samples (one recipe, as the 2026-12-02 curve): ln(steps) = ln(samples) + const
    pts = [Point(s, 1.0 + 0.2 * math.log(s), 0.05, train_steps=s // 40) for s in (4000, 8000, 16000, 32000)]
    f = fit(pts, steps=3)
    assert f is not None and not f.recipe_aware and f.fallback and "collinear" in f.fallback
    assert f.b == pytest.approx(0.2, abs=1e-6)
    assert "samples only" in line(f, 8000, 2.5)
    assert fit([*pts[:3], Point(4000, 2.0, 0.05)], steps=3).fallback == "some points have no recorded optimizer steps"


def test_the_reference_fit_with_an_intercept_per_dataset_predicts_every_point_left_out():
    """Leave-one-out over the reference points at 3 steps (eval/bench/recipe_forecast_notes.md has every one): with
    one intercept per dataset, each point is predicted by the rest within the two bands combined, the 4,368- and
    3,782-step runs of two datasets ~0.3 apart included. Pooled as one dataset (the fit before the 64K point), the
    rest missed that point: the band a dataset not measured yet needs carries the datasets' spread."""
    pts = [p for p in REFERENCE if p.steps == 3]
    for i, p in enumerate(pts):
        rest = fit(pts[:i] + pts[i + 1 :], steps=3)
        assert rest is not None and rest.recipe_aware and rest.datasets == 2
        mean, half = rest.predict(p.samples, p.train_steps)
        assert abs(mean - p.accept_length) <= math.hypot(half, Z * p.se), p  # its band and the point's interval
    full = fit(pts, steps=3)
    assert full.datasets == 2 and full.b > 0 and full.c > 0 and full.between_datasets > 0.15
    pooled = [dataclasses.replace(p, dataset=None) for p in pts]
    newest = pooled[-1]
    before = fit(pooled[:-1], steps=3)
    mean, half = before.predict(newest.samples, newest.train_steps)
    assert before.datasets == 1 and abs(mean - newest.accept_length) > math.hypot(half, Z * newest.se)


def test_an_intercept_per_dataset_recovers_the_slope_a_lower_dataset_bends_when_pooled():
    """Two datasets on one slope (0.2 per e-fold of samples), the second 0.3 lower and measured at larger sizes:
    pooled, the offset flattens the slope; with a dataset each, the slope and the spread come back exactly."""
    pts = [Point(n, 0.2 * math.log(n) + off, 0.02, dataset=name)
           for name, off, sizes in (("a", 0.0, (1000, 3000, 9000)), ("b", -0.3, (9000, 27000, 81000)))
           for n in sizes]  # fmt: skip
    split = fit(pts, steps=3)
    assert split.datasets == 2 and split.b == pytest.approx(0.2, abs=1e-9)
    assert split.a == pytest.approx(-0.15, abs=1e-9) and split.between_datasets == pytest.approx(0.3 / math.sqrt(2))
    pooled = fit([dataclasses.replace(p, dataset=None) for p in pts], steps=3)
    assert pooled.datasets == 1 and pooled.b < 0.17
    assert "2 datasets" in line(split, 20000, 2.5) and "datasets" not in line(pooled, 20000, 2.5)
    one = [dataclasses.replace(p, dataset="a") for p in pts]  # one named dataset: one intercept, as unnamed
    assert fit(one, steps=3).datasets == 1 and fit(one, steps=3).b == pytest.approx(pooled.b)


def test_a_goal_the_band_s_low_edge_never_reaches_is_said_so_not_printed_as_a_number():
    """The reference's band at 3 steps widens faster than its low edge rises: for AL 3 the pessimistic count is
    beyond any search. The sentence says so (it printed 10,000,000,000,000)."""
    f = fit(REFERENCE, steps=3)
    text = line(f, 2000, 3.0, train_steps=2000)
    assert "the band's low edge never reaches it" in text and "10,000,000,000,000" not in text
    assert "(" in line(f, 2000, 2.5, train_steps=2000).split("you need")[1]  # a reachable goal keeps its range


def test_points_of_two_targets_in_one_home_get_an_intercept_each_and_a_target_reads_only_its_own(tmp_path):
    """A home with pilots of a toy target and of a real one (a real DuckDB catalog): find's plan (no target known)
    fits them with an intercept per target, so the toy's lower curve does not bend the slope; a draft's forecast
    reads its own target's points only."""
    from catalog import Catalog

    catalog = Catalog(tmp_path / "home")
    rows = [
        {"draft": f"/d/{t}-{n}", "target": f"/models/{t}", "wiring": "configured", "method": "specdecode",
         "steps": 3, "accept_length": 0.2 * math.log(n) + off, "al_low": 0.2 * math.log(n) + off - 0.04,
         "al_high": 0.2 * math.log(n) + off + 0.04, "train_samples": n}
        for t, off, sizes in (("toy", -0.5, (1000, 3000, 9000)), ("real", 0.0, (9000, 27000, 81000)))
        for n in sizes
    ]  # fmt: skip
    catalog.upsert("draft_evals", rows)
    every = measured_points(catalog)
    f = fit(every, steps=3)
    assert len(every) == 6 and f.datasets == 2 and f.b == pytest.approx(0.2, abs=1e-6)
    own = measured_points(catalog, "/models/real")
    assert sorted(p.samples for p in own) == [9000, 27000, 81000] and fit(own, steps=3).datasets == 1
