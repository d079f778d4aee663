"""Loss masks from the generation boundary, checked at exact token positions on hand-written conversations."""

from __future__ import annotations

import pytest

from pipeline.build.render import MaskBuilder, NotPrefixStable, template_messages, trainable_turns


def _pieces(tokenizer, *parts):
    """Token ids built piece by piece: special tokens by id, text by encoding it alone.

    Independent of the code under test: BPE never merges across a special token, so this is exactly
    what the rendered conversation must tokenize to.
    """
    ids = []
    for part in parts:
        if part.startswith("<") and part.endswith(">") and part in tokenizer.get_vocab():
            ids.append(tokenizer.convert_tokens_to_ids(part))
        else:
            ids += tokenizer(part, add_special_tokens=False)["input_ids"]
    return ids


def _turn(tokenizer, role_token, name, text):
    return _pieces(tokenizer, role_token, name, "<|im_middle|>", text, "<|im_end|>")


def _answer(tokenizer, text, reasoning=""):
    return _pieces(tokenizer, "<think>", *([reasoning] if reasoning else []), "</think>", text, "<|im_end|>")


def _rows(tokenizer, conv, per_turn=True, thinking=True, system_prompt=None, keep_past_reasoning=False):
    builder = MaskBuilder(
        tokenizer, thinking=thinking, end_of_turn="<|im_end|>", keep_past_reasoning=keep_past_reasoning
    )
    msgs = template_messages(conv, system_prompt)
    return builder.rows(msgs, trainable_turns(conv.messages, len(msgs) - len(conv.messages)), per_turn)


def test_single_turn_mask_is_exactly_the_answer_plus_end_of_turn(tokenizer, conversation):
    conv = conversation("c-0", [("user", "Hi there"), ("assistant", "Hello, friend.")])
    [row] = _rows(tokenizer, conv)
    context = _turn(tokenizer, "<|im_user|>", "user", "Hi there") + _pieces(
        tokenizer, "<|im_assistant|>", "assistant", "<|im_middle|>"
    )
    answer = _answer(tokenizer, "Hello, friend.")
    assert row.input_ids == context + answer
    assert [i for i, m in enumerate(row.loss_mask) if m] == list(range(len(context), len(context) + len(answer)))
    assert row.input_ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>") and row.loss_mask[-1] == 1


def _multi_turn(tokenizer, conversation):
    conv = conversation(
        "c-1",
        [
            ("system", "Be brief."),
            ("user", "2+2?"),
            ("assistant", "4", "add"),
            ("user", "and 3+3?"),
            ("assistant", "6"),
            ("user", "bye"),
            ("assistant", "skip me", None, False),
        ],
    )
    system = _turn(tokenizer, "<|im_system|>", "system", "Be brief.")
    u1, u2 = _turn(tokenizer, "<|im_user|>", "user", "2+2?"), _turn(tokenizer, "<|im_user|>", "user", "and 3+3?")
    head = _pieces(tokenizer, "<|im_assistant|>", "assistant", "<|im_middle|>")
    a1, a2 = _answer(tokenizer, "4", "add"), _answer(tokenizer, "6")
    return conv, system, u1, u2, head, a1, a2


def test_native_multi_turn_gives_one_row_per_trainable_assistant_turn(tokenizer, conversation):
    conv, system, u1, u2, head, a1, a2 = _multi_turn(tokenizer, conversation)
    rows = _rows(tokenizer, conv)
    assert [r.turn for r in rows] == [2, 4]  # the train=False turn gives no row
    first, second = rows
    assert first.input_ids == system + u1 + head + a1
    start = len(system + u1 + head)
    assert [i for i, m in enumerate(first.loss_mask) if m] == list(range(start, start + len(a1)))
    # The first answer comes back into turn 4's context without its reasoning, as regeneration sent it.
    a1_seen = _answer(tokenizer, "4")
    assert second.input_ids == system + u1 + head + a1_seen + u2 + head + a2
    start = len(system + u1 + head + a1_seen + u2 + head)
    assert [i for i, m in enumerate(second.loss_mask) if m] == list(range(start, start + len(a2)))
    kept = _rows(tokenizer, conv, keep_past_reasoning=True)[1]
    assert kept.input_ids == system + u1 + head + a1 + u2 + head + a2


def test_all_turns_in_one_row_masks_every_answer_and_nothing_else(tokenizer, conversation):
    conv, system, u1, u2, head, a1, a2 = _multi_turn(tokenizer, conversation)
    [row] = _rows(tokenizer, conv, per_turn=False)
    u3 = _turn(tokenizer, "<|im_user|>", "user", "bye")
    a3 = _answer(tokenizer, "skip me")
    assert row.input_ids == system + u1 + head + a1 + u2 + head + a2 + u3 + head + a3
    s1 = len(system + u1 + head)
    s2 = s1 + len(a1 + u2 + head)
    expected = list(range(s1, s1 + len(a1))) + list(range(s2, s2 + len(a2)))
    assert [i for i, m in enumerate(row.loss_mask) if m] == expected


def test_thinking_off_and_injected_system_prompt(tokenizer, conversation):
    conv = conversation("c-2", [("user", "Hi"), ("assistant", "Yo", "secret thought")])
    [row] = _rows(tokenizer, conv, thinking=False, system_prompt="You are Kimi.")
    system = _turn(tokenizer, "<|im_system|>", "system", "You are Kimi.")
    context = system + _turn(tokenizer, "<|im_user|>", "user", "Hi")
    # With thinking off the generation prompt already holds the empty think block: only the answer trains.
    context += _pieces(tokenizer, "<|im_assistant|>", "assistant", "<|im_middle|>", "<think>", "</think>")
    answer = _pieces(tokenizer, "Yo", "<|im_end|>")
    assert row.input_ids == context + answer
    assert [i for i, m in enumerate(row.loss_mask) if m] == list(range(len(context), len(context) + len(answer)))


def _with_template(tokenizer, template):
    import copy

    changed = copy.deepcopy(tokenizer)
    changed.chat_template = template
    return changed


def test_generation_prompt_that_differs_from_the_rendered_turn_raises(tokenizer, conversation):
    # The generation prompt says "assistant" while rendered turns say "bot": no boundary to mask from.
    bad = _with_template(
        tokenizer,
        tokenizer.chat_template.replace(
            "<|im_assistant|>assistant<|im_middle|><think>", "<|im_assistant|>bot<|im_middle|><think>"
        ),
    )
    conv = conversation("c-3", [("user", "Hi"), ("assistant", "Hello")])
    with pytest.raises(NotPrefixStable, match="not prefix-stable at assistant turn 1"):
        _rows(bad, conv)


def test_template_that_drops_past_reasoning_raises_for_all_turns_rows_only(tokenizer, conversation):
    # Like several reasoning templates: only the last assistant turn keeps its reasoning.
    bad = _with_template(
        tokenizer,
        tokenizer.chat_template.replace(
            "{%- if thinking and message.get('reasoning_content') -%}",
            "{%- if thinking and loop.last and message.get('reasoning_content') -%}",
        ),
    )
    conv = conversation("c-4", [("user", "a"), ("assistant", "b", "why"), ("user", "c"), ("assistant", "d")])
    with pytest.raises(NotPrefixStable):
        _rows(bad, conv, per_turn=False)
    # Per-turn rows give each answer its generation-time context (past reasoning dropped): stable here too.
    assert [r.input_ids for r in _rows(bad, conv)] == [r.input_ids for r in _rows(tokenizer, conv)]


def test_unknown_end_of_turn_token_is_refused(tokenizer):
    from catalog.errors import DraftsetError

    with pytest.raises(DraftsetError, match="not a single token"):
        MaskBuilder(tokenizer, thinking=True, end_of_turn="<|eot_id|>")
