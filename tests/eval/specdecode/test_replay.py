"""The step-1 gap, pinned: decoding and the teacher-forced replay of it agree round for round.

Rows are the toy target's own greedy output (as regenerated data is), the draft is trained online on
them, and `check draft`'s replayed decode on its rows must give the same rounds as real speculative
decoding on the same prompts: then step-1 acceptance below teacher-forced step-1 accuracy is the walk's
selection (rounds start after rejections), not a harness mismatch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from eval.specdecode.replay import (
    Interval,
    accept_length_interval,
    paired_difference,
    prompt_interval,
    separation,
    tokens_to_separate,
    walk,
)
from tests.kits.draft_toy import TEMPLATE, VOCAB, make_target, plain_config

MAX_NEW, STEPS = 24, 3


def _greedy_build(model_dir, build_dir, n_rows=40):
    """Prompts of 8 random tokens, answers by the target's greedy decoding (what regenerate makes)."""
    import hashlib

    from pipeline.build.vocab import draft_vocab, save_vocab, token_counts
    from pipeline.targets.load import load_target

    model = load_target(model_dir, torch.float32)
    g = torch.Generator().manual_seed(3)
    prompts = torch.randint(3, VOCAB, (n_rows, 8), generator=g)
    with torch.inference_mode():  # one batch, no padding (equal prompt lengths), no end token: 40 new each
        out = model.generate(prompts, max_new_tokens=40, min_new_tokens=40, do_sample=False, pad_token_id=0)
    rows = [
        {"id": f"g{i:03d}", "conversation_id": f"c{i}", "input_ids": ids, "loss_mask": [0] * 8 + [1] * 40}
        for i, ids in enumerate(out.tolist())
    ]
    build_dir.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), build_dir / "rows-00000.parquet")
    counts = token_counts([build_dir / "rows-00000.parquet"], VOCAB)
    save_vocab(build_dir / "vocab.safetensors", *draft_vocab(counts, 256), counts)
    manifest = {
        "model_dir": str(model_dir),
        "chat_template_sha256": hashlib.sha256(TEMPLATE.encode()).hexdigest(),
        "vocab_size": VOCAB,
        "draft_vocab_size": 256,
        "system_prompt": None,
        "thinking": None,
        "max_length": 48,
        "n_rows": n_rows,
        "n_tokens": 48 * n_rows,
    }
    (build_dir / "manifest.json").write_text(json.dumps(manifest))
    return build_dir


@pytest.fixture(scope="module")
def online(tmp_path_factory):
    from pipeline.train.loop import run_train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("replay")
    model = make_target(root / "model", seed=5)
    model.joinpath("generation_config.json").unlink(missing_ok=True)  # no end-of-turn: every row is 40 tokens
    build = _greedy_build(model, root / "build")
    run_train(
        plain_config(
            capture_dir=None,
            build_dir=build,
            model_dir=model,
            online=True,
            layers=[2, 5, 7],
            out_dir=root / "draft",
            epochs=12,
            lr=2e-2,
            batch_tokens=512,
            ttt_steps=STEPS,
            heldout_every=0,  # a random toy target does not generalise: replay the rows it learned
            log_every=1000,
            device="cpu",
        )
    )
    yield root / "draft", build, model
    torch.set_num_threads(threads)


def test_replayed_decode_is_the_measured_decode(online):
    from eval.checks.draft_check import check_draft
    from eval.specdecode.evaluate import measure

    draft, build, model = online
    report = check_draft(draft, build, model, max_samples=6, max_new=MAX_NEW)  # a build: taps recomputed
    m = measure(draft, build, model, [STEPS, 2], n_prompts=6, max_new=MAX_NEW, device="cpu", wrong_steps=[2])
    held, [run] = report.headline, [r for r in m.runs if r.steps == STEPS]  # wrong wirings at 2 steps only
    assert {r.name for r in m.runs if r.steps == 2} == {"configured"} | {n for n, _, _ in m.separations()}
    # the replay at fewer steps (the same hits, cut) is the decode at fewer steps
    two = next(r for r in m.runs if r.steps == 2 and r.name == "configured")
    assert (
        held.by_steps[2].value == pytest.approx(two.accept_length) and held.by_steps[STEPS].value == run.accept_length
    )
    assert report.heldout is None and held.exact and run.ties == 0
    assert 1.2 < run.accept_length  # the draft learned something, so the rounds below are not all zeros
    assert held.rounds == run.accepted  # round for round: the harness is the trained draft
    assert held.step_acceptance == pytest.approx(run.step_acceptance)
    # the product of teacher-forced accuracies counts every position once; decoding does not
    assert held.independent_al != pytest.approx(run.accept_length, abs=1e-3)


def test_walk_follows_the_leading_run_of_right_steps():
    t, f = True, False
    hits = [
        torch.tensor([t, t, f, t, f, t, t, t, t, t]),
        torch.tensor([f, t, f, f, f, t, f, t, t, f]),
        torch.tensor([f, t, f, f, f, t, f, f, t, f]),
    ]
    assert walk(hits, 1, 11, None) == [3, 3, 1]  # rounds at t=1, 5, 9
    assert walk(hits, 2, 11, None) == [0, 1, 3, 1]  # a rejection at t=2: the next round starts at t=3
    assert walk(hits, 1, 11, 5) == [3]  # a 5-token decode is done after the round that made tokens 2..5


def test_intervals_say_when_wirings_are_not_separated():
    a = accept_length_interval([2, 3, 1, 2] * 10)
    b = accept_length_interval([2, 3, 1, 1] * 10)
    assert isinstance(a, Interval) and a.low < a.value < a.high and a.n_rounds == 40
    assert a.overlaps(b)
    line = separation(a, b)
    need = tokens_to_separate(a, b)
    assert line.startswith("not separated at this sample size") and need is not None and need > a.n_tokens
    far = accept_length_interval([0] * 40)
    assert separation(a, far) == "separated"


def test_the_interval_over_prompts_carries_how_much_prompts_differ():
    """Eight prompts that accept everything and eight that accept nothing, 30 rounds each: the rounds' interval is
    narrow (480 rounds), but a second set of 16 such prompts can land anywhere from mostly one kind to the other;
    over prompts the interval says so. Prompts that all behave alike give the same figure and no width."""
    mixed = [[3] * 30] * 8 + [[0] * 30] * 8
    rounds = accept_length_interval([a for r in mixed for a in r])
    prompts = prompt_interval(mixed)
    assert prompts is not None and prompts.value == pytest.approx(rounds.value) == pytest.approx(2.5)
    assert prompts.n_rounds == rounds.n_rounds == 480 and prompts.n_tokens == rounds.n_tokens == 1200
    assert (prompts.high - prompts.low) > 3 * (rounds.high - rounds.low)
    assert prompts.low < 2.1 and prompts.high > 2.9  # 16 draws of two kinds: the share of each varies by ~0.25
    alike = prompt_interval([[2, 3, 1, 2]] * 16)
    assert alike is not None and alike.low == alike.high == alike.value == pytest.approx(3.0)
    uneven = prompt_interval([[3] * 90, [0] * 10])  # a ratio of sums: long prompts weigh by their rounds
    assert uneven is not None and uneven.value == pytest.approx((90 * 4 + 10) / 100)
    assert prompt_interval([[1, 2, 3]]) is None and prompt_interval([[1], []]) is None


def test_a_paired_difference_tells_a_lever_from_noise_that_the_prompt_intervals_cannot():
    """Two drafts on the same 16 prompts of very different difficulty; the better one accepts one more token a round
    on half the rounds of every prompt. Each draft's interval over prompts is wide (the prompts differ) and the two
    overlap; paired, the prompts' difficulty cancels and the difference's interval excludes zero."""
    base = [[3] * 20] * 4 + [[2] * 20] * 4 + [[1] * 20] * 4 + [[0] * 20] * 4
    better = [[a + (i % 2) for i, a in enumerate(r)] for r in base]
    a, b = prompt_interval(better), prompt_interval(base)
    assert a is not None and b is not None and a.low < b.high  # unpaired: they overlap
    d = paired_difference(better, base)
    assert d is not None and d.value == pytest.approx(0.5) and 0.0 < d.low <= d.value <= d.high < 1.0
    assert d.n_prompts == 16 and str(d).startswith("+0.500 [")
    same = paired_difference(base, base)
    assert same is not None and same.value == same.low == same.high == 0.0
    assert paired_difference(base, base[:-1]) is None  # other prompts: not a pair
    assert paired_difference([[1], []], [[1], [2]]) is None  # one prompt decoded by both: nothing to resample


def rest_of_build(build, heldout_every):
    from eval.forecast_pilot import nested
    from pipeline.capture.rows import read_build_rows

    _, rows = read_build_rows(build, vocab_size=1 << 62)
    return nested([r.id for r in rows if not r.problem], heldout_every)[1]


def test_pilot_records_nested_points_the_forecast_fits(online, home, tmp_path):
    from agents.forecast import fit, measured_points
    from catalog import Catalog
    from eval.forecast_pilot import nested, run_pilot
    from eval.specdecode import records
    from pipeline.train.loop import run_train

    _, build, model = online
    held, rest = nested([f"g{i:03d}" for i in range(40)], 4)
    assert held and set(held).isdisjoint(rest) and sorted(held + rest) == [f"g{i:03d}" for i in range(40)]

    def train(sub, draft_dir):
        cfg = plain_config(
            capture_dir=None,
            build_dir=sub,
            model_dir=model,
            online=True,
            layers=[2, 5, 7],
            out_dir=draft_dir,
            epochs=2,
            lr=1e-2,
            batch_tokens=512,
            ttt_steps=2,
            heldout_every=4,
            log_every=1000,
            device="cpu",
        )
        run_train(cfg)

    catalog = Catalog(home)
    pilot = run_pilot(
        build,
        model,
        tmp_path / "pilot",
        [0.25, 0.5, 1.0],
        None,
        train,
        [2],
        2,
        6,
        heldout_every=4,
        device="cpu",
        record=lambda m: records.save(catalog, records.specdecode_rows(m)),
    )
    sizes = [p.train_samples for p in pilot.points]
    assert sizes == sorted(sizes) and len(set(sizes)) == 3 and not pilot.skipped
    assert all(p.recipe is None for p in pilot.points)  # every recipe setting given (plain_config): no row applied
    assert sorted(pilot.full_lengths) == sorted(rest_of_build(build, 4))  # the whole build's training rows
    points = measured_points(catalog)
    assert sorted(p.samples for p in points) == sizes and all(p.steps == 2 and p.se > 0 for p in points)
    # the recipe comes from each draft's resolved.json: its optimizer steps grow with its subset, at 512 tokens
    assert all(p.batch_tokens == 512 and p.train_steps for p in points)
    by_size = sorted(points, key=lambda p: p.samples)
    assert by_size[0].train_steps < by_size[-1].train_steps
    assert sorted(p.train_steps for p in points) == sorted(p.train_steps for p in pilot.points)
    assert fit(points, steps=2) is not None
    # the forecast of a draft of this target reads this target's points only, each named by it
    assert {p.dataset for p in points} == {str(Path(model).resolve())}
    assert measured_points(catalog, model) == points and measured_points(catalog, tmp_path / "another") == []


def test_a_measurement_names_the_wirings_it_cannot_separate():
    from eval.specdecode.evaluate import Measurement, WiringRun

    def run(name, accepted):
        return WiringRun(name, [1], 3, 0.0, [], 2, sum(a + 1 for a in accepted), 1.0, 0, accepted)

    m = Measurement("d", "t", "cpu", 2, 64, 1.0)
    m.runs = [run("configured", [1, 2, 0, 1] * 8), run("shifted +1", [1, 1, 0, 1] * 8), run("order swapped", [0] * 64)]
    lines = {name: line for name, steps, line in m.separations()}
    assert lines["order swapped"] == "separated"
    assert (
        lines["shifted +1"].startswith("not separated at this sample size (")
        and "tokens per wiring" in lines["shifted +1"]
    )
