"""The curve bench's carried rows survive the round trip, and the forecast's reference is the measured curve."""

from __future__ import annotations

from pathlib import Path

from agents.forecast import CURVE_2026_12_02
from eval.bench.bench_real_target_curve import load_rows, nested, save_rows
from eval.bench.bench_real_target_curve_plot import curve_points

CURVE = Path(__file__).parents[3] / "eval" / "bench" / "bench_real_target_curve.json"


def test_rows_come_back_token_for_token_with_their_masks(tmp_path):
    rows = [
        {"id": f"r{i}", "input_ids": list(range(i, i + 5 + i % 4)) + [49151], "n_tokens": 6 + i % 4, "n_trainable": 2}
        for i in range(300)
    ]
    save_rows(rows, tmp_path / "rows.npz")
    back = load_rows(tmp_path / "rows.npz")
    assert [(r["id"], r["input_ids"], r["n_tokens"]) for r in back] == [
        (r["id"], r["input_ids"], r["n_tokens"]) for r in rows
    ]
    assert all(r["loss_mask"] == [0] * (r["n_tokens"] - 2) + [1, 1] for r in back)
    held, rest = nested(back, 20)
    assert held and {r["id"] for r in held}.isdisjoint(r["id"] for r in rest) and len(held) + len(rest) == 300


def test_the_forecasts_reference_points_are_the_committed_measurement():
    measured = sorted((p.steps, p.samples, round(p.accept_length, 3), round(p.se, 3)) for p in curve_points(CURVE))
    assert sorted((p.steps, p.samples, p.accept_length, p.se) for p in CURVE_2026_12_02) == measured


def test_held_out_prompts_with_an_exact_or_near_copy_in_training_are_found():
    from eval.bench.bench_real_target_curve_dedup import copies_in, user_prompt
    from pipeline.rows.keys import normalize

    base = "write a short python function that checks whether a number is prime and explain how it works step by step"
    corpus = [normalize(base), normalize("what is the capital of france and why is it famous for its museums")]
    queries = [
        normalize(base.upper() + "!"),  # exact once normalized
        normalize(base.replace("by step", "by stage")),  # the last word changed (Jaccard 18/20): near
        normalize("tell me a story about a dragon who learns to bake bread in a small mountain village"),
    ]
    assert copies_in(queries, corpus, 0.8, 128, 2) == [0, 1]
    rendered = (
        "<|im_start|>system\nYou are SmolLM<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
    )
    assert user_prompt(rendered) == "Hi there"
