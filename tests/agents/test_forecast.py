"""The data forecast: a log-linear fit of measured accept lengths, its band, and what it says it cannot know."""

from __future__ import annotations

import math

import pytest

from agents.forecast import Cost, Point, fit, line

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
