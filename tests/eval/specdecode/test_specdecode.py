"""Speculative decoding in eval/specdecode: the draft runs as trained, output equals greedy, AL is measured."""

from __future__ import annotations

import json

import pytest
import torch

from eval.specdecode.decode import step_acceptance
from eval.specdecode.runners import DraftRunner
from pipeline.capture.store import CaptureReader
from pipeline.train.export import load_exported
from pipeline.train.target_head import FrozenTarget


def _training_logits(draft, embed, ids, aux, steps):
    """Draft logits per step over a whole row, exactly as training computes them (pipeline/train)."""
    from pipeline.train.ttt import _shift

    ids = ids[None]
    hidden, cache, out = draft.fc(aux[None]), [], []
    for k in range(steps):
        pos = torch.arange(ids.shape[1]) + k
        logits, hidden = draft.step(torch.nn.functional.embedding(_shift(ids, k + 1), embed), hidden, pos, cache)
        out.append(logits[0])
    return out


def test_incremental_draft_is_the_trained_draft(toy):
    draft, manifest, _ = load_exported(toy.draft)
    embed = FrozenTarget.from_model_dir(toy.model, manifest.rms_norm_eps).embed.float()
    reader = CaptureReader(toy.capture)
    sample = reader.load(reader.ids()[0])
    ids, aux = sample["input_ids"].long(), sample["aux"].float()
    t = 20
    runner = DraftRunner(draft, embed, wiring=[0])  # states[0] = the stored aux: the wiring under test
    runner.commit([aux[:9]], ids[1:10].tolist())  # committed in two pieces, as rounds do
    runner.commit([aux[9 : t + 1]], ids[10 : t + 2].tolist())
    proposals = runner.propose(4)
    # the chain's step k sees the tokens the draft itself proposed: feed those to the training forward
    fed = torch.cat([ids[: t + 2], torch.tensor(proposals[:-1])])
    trained = _training_logits(draft, embed, fed, torch.cat([aux[: t + 1], aux[: len(fed) - t - 1]]), 4)
    assert torch.allclose(runner.last_logits, trained[0][t], atol=1e-4)
    for k, token in enumerate(proposals):
        assert int(draft.to_target_ids(trained[k][t].argmax())) == token


def test_step_acceptance_is_conditional_on_reaching_the_step():
    assert step_acceptance([0, 1, 3, 3], 3) == [0.75, 2 / 3, 1.0]
    assert step_acceptance([], 2) == [0.0, 0.0]


class OracleDraft:
    """Proposes the reference output itself, wrong from token `wrong_from` on: the counting must follow."""

    def __init__(self, reference: list[int], wrong_from: int = 10**9, vocab: int = 384):
        self.reference, self.wrong_from, self.vocab, self.done = reference, wrong_from, vocab, 0

    def reset(self) -> None:
        self.done = 0

    def commit(self, states, next_tokens) -> None:
        self.done += 1 if self.done == 0 else len(next_tokens)

    def propose(self, steps: int) -> list[int]:
        out = []
        for i in range(self.done, self.done + steps):
            right = self.reference[i] if i < len(self.reference) else 0
            out.append(right if i < self.wrong_from else (right + 1) % self.vocab)
        return out


def test_accept_length_counts_what_verification_accepts(toy):
    from eval.specdecode.decode import greedy, speculative
    from eval.specdecode.runners import TargetRunner
    from pipeline.targets.load import load_target

    target = TargetRunner(load_target(toy.model, torch.float32))
    prompt = [5, 17, 33, 2, 90, 41, 7, 8]
    ref = greedy(target, prompt, 24, None)
    perfect = speculative(target, OracleDraft(ref.tokens), prompt, 24, None, steps=3)
    assert perfect.tokens == ref.tokens and perfect.accepted == [3] * 6  # 1 + 6 rounds x 4 = 25 ≥ 24
    useless = speculative(target, OracleDraft(ref.tokens, wrong_from=0), prompt, 24, None, steps=3)
    assert useless.tokens == ref.tokens and useless.accepted == [0] * 23  # one token per forward
    half = speculative(target, OracleDraft(ref.tokens, wrong_from=11), prompt, 24, None, steps=3)
    assert half.tokens == ref.tokens and half.accepted[:3] == [3, 3, 2] and set(half.accepted[3:]) == {0}


@pytest.fixture(scope="module")
def measured(toy):
    from eval.specdecode.evaluate import measure

    return measure(toy.draft, toy.capture, steps=[2], n_prompts=4, max_new=16, device="cpu")


def test_every_wiring_decodes_exactly_the_greedy_output(measured):
    # The toy draft is trained on random tokens, not on the target's answers: it rarely guesses the
    # target's greedy output (accept length near 1 for every wiring; the real target shows the gaps).
    assert {"configured", "shifted +1", "shifted -1", "order swapped"} <= {r.name for r in measured.runs}
    for r in measured.runs:
        assert r.ties == 0 and r.n_tokens == measured.greedy_tokens and r.steps == 2  # == plain greedy
        assert 1.0 <= r.accept_length <= 3.0 and len(r.step_acceptance) == 2


def test_cli_measures_records_and_check_draft_shows_it(toy, home):
    pytest.importorskip("langgraph", reason="the full CLI needs the find stack (absent on GPU hosts)")
    from typer.testing import CliRunner

    from catalog import Catalog
    from pipeline.cli.app import app

    runner = CliRunner()
    out = runner.invoke(
        app,
        [
            "check",
            "accept-length",
            str(toy.draft),
            "--captures",
            str(toy.capture),
            "--steps",
            "1",
            "--steps",
            "2",
            "--prompts",
            "2",
            "--max-new-tokens",
            "6",
            "--configured-only",
            "--device",
            "cpu",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    runs = json.loads(out.stdout)["tables"][0]["rows"]  # --json: one document of numbers on stdout
    assert [r["steps"] for r in runs] == [1, 2] and all(r["accept_length_interval"]["value"] >= 1 for r in runs)
    for r in runs:  # over the two prompts: the same figure, its own interval
        over = r["accept_length_prompt_interval"]
        assert over["value"] == pytest.approx(r["accept_length_interval"]["value"]) and over["low"] <= over["high"]
    rows = Catalog(home).query(
        "SELECT wiring, method, steps, n_prompts, n_tokens, accept_length, ties FROM draft_evals ORDER BY steps"
    )
    assert [(r["wiring"], r["method"], r["steps"], r["n_prompts"], r["ties"]) for r in rows] == [
        ("configured", "specdecode", 1, 2, 0),
        ("configured", "specdecode", 2, 2, 0),
    ]
    assert all(r["n_tokens"] == 12 and r["accept_length"] >= 1 for r in rows)
    shown = runner.invoke(
        app, ["check", "draft", str(toy.draft), "--captures", str(toy.capture), "--max-samples", "4", "--json"]
    )
    tables = {t["title"].split(":")[0]: t["rows"] for t in json.loads(shown.stdout)["tables"]}
    assert "accept length measured by speculative decoding (draft_evals)" in tables, shown.output
    assert all(isinstance(r["accept_length"], float) for r in tables["check draft"])
    estimates = Catalog(home).query("SELECT wiring, steps FROM draft_evals WHERE method = 'estimate'")
    assert ("configured", 3) in {(r["wiring"], r["steps"]) for r in estimates}
