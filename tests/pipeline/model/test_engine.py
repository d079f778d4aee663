"""Engine-level behaviour that needs a steered model: end-of-turn finish and the reasoning split."""

from __future__ import annotations

import pytest

from pipeline.servers.devserver.engine import Detokenizer, Engine, RequestError, SamplingParams, normalise_messages


@pytest.fixture(scope="module")
def engine(toy_model_dir):
    return Engine(toy_model_dir)


def test_end_of_turn_token_finishes_with_stop(engine):
    # Steer the logits so the end-of-turn token always wins: the finish must then be "stop".
    hook = engine.model.lm_head.register_forward_hook(lambda mod, inp, out: out.index_fill(-1, _eos(engine), 1e4))
    try:
        gen = engine.generate([engine.eos_id - 1, 300], SamplingParams(50, 0.0, 1.0, None), on_token=lambda t: None)
    finally:
        hook.remove()
    assert gen.completion_ids == [engine.eos_id] and gen.finish_reason == "stop"


def _eos(engine):
    import torch

    return torch.tensor([engine.eos_id])


def test_detokenizer_splits_reasoning_on_the_think_end_token(engine):
    tok = engine.tokenizer
    ids = (
        [engine.think_start_id]
        + tok("plan é", add_special_tokens=False)["input_ids"]
        + [engine.think_end_id]
        + tok("answer ü", add_special_tokens=False)["input_ids"]
        + [engine.eos_id]
    )
    detok = Detokenizer(engine, thinking=True)
    deltas = [d for d in map(detok.push, ids) if d]
    assert detok.text == {"reasoning": "plan é", "content": "answer ü"}
    assert "".join(text for field, text in deltas if field == "content") == "answer ü"


def test_detokenizer_without_thinking_keeps_everything_as_content(engine):
    detok = Detokenizer(engine, thinking=False)
    for token in engine.tokenizer("a </think> b", add_special_tokens=False)["input_ids"]:
        detok.push(token)
    assert detok.text["reasoning"] == "" and detok.text["content"] == "a  b"


def test_budget_is_clamped_to_the_context_left(engine):
    assert engine.max_new_tokens(2000, 10_240) == 48
    assert engine.max_new_tokens(10, None) == 2038


def test_a_cancelled_request_stops_after_one_token(engine):
    import threading

    cancelled = threading.Event()
    cancelled.set()  # the client hung up before its turn came
    gen = engine.generate([300, 301], SamplingParams(500, 0.0, 1.0, None), on_token=lambda t: None, cancelled=cancelled)
    assert len(gen.completion_ids) == 1


def test_missing_model_dir_says_how_to_make_one(tmp_path):
    from catalog.errors import DraftsetError

    with pytest.raises(DraftsetError, match="not a model directory") as info:
        Engine(tmp_path / "nothing")
    assert "draftset model init-toy" in info.value.hint


def test_thinking_answer_that_does_not_open_with_think_is_all_content(engine):
    detok = Detokenizer(engine, thinking=True)
    for token in engine.tokenizer("plain answer", add_special_tokens=False)["input_ids"] + [engine.eos_id]:
        detok.push(token)
    assert detok.text == {"reasoning": "", "content": "plain answer"}


@pytest.mark.parametrize("part", [{"type": "text"}, {"type": "text", "text": 5}])
def test_a_text_part_without_string_text_is_a_request_error(part):
    # Found by mypy (issue 9): "".join over a None/int text raised TypeError, a 500 instead of a 400.
    with pytest.raises(RequestError, match="needs a string `text`"):
        normalise_messages([{"role": "user", "content": [{"type": "text", "text": "a"}, part]}])
    assert normalise_messages([{"role": "user", "content": [{"type": "text", "text": "a"}]}])[0]["content"] == "a"
