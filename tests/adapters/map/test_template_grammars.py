"""The chat-template grammars (adapters/map/rendered.py) are the one home of template names and tokens: every
grammar reads its own rendering back, the other modules that name template text take it from there
(adapters/map/turns.py's end tokens, adapters/infer/columns.py's ChatML header), and a template's control text left inside
a turn is flagged by adapters/map/markup.py. A new grammar is one entry in GRAMMARS plus its example below."""

from __future__ import annotations

import pytest

from adapters.infer import columns
from adapters.map import turns
from adapters.map.markup import find_markup
from adapters.map.rendered import BY_NAME, END_TOKENS, GRAMMARS, best_grammar, literal_markers, turns_of

# One conversation rendered by each template: system (where the template has a place for it), user, assistant.
EXAMPLES = {
    "chatml": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nName a prime.<|im_end|>\n"
    "<|im_start|>assistant\nSeven.<|im_end|>",
    "llama3": "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nName a prime.<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nSeven.<|eot_id|>",
    "llama2": "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nName a prime. [/INST] Seven. </s>",
    "gemma": "<bos><start_of_turn>user\nName a prime.<end_of_turn>\n<start_of_turn>model\nSeven.<end_of_turn>",
    "zephyr": "<|system|>\nBe brief.</s>\n<|user|>\nName a prime.</s>\n<|assistant|>\nSeven.</s>",
    "alpaca": "Below is an instruction.\n\n### Instruction:\nName a prime.\n\n### Response:\nSeven.",
    "vicuna": "Be brief. USER: Name a prime. ASSISTANT: Seven.</s>",
    "guanaco": "### Human: Name a prime.### Assistant: Seven.",
    "human-assistant": "\n\nHuman: Name a prime.\n\nAssistant: Seven.",
}


def test_every_grammar_has_its_example_and_names_are_unique():
    assert [g.name for g in GRAMMARS] == list(BY_NAME) and set(EXAMPLES) == set(BY_NAME)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_grammar_reads_its_own_rendering_back(name):
    grammar, text = BY_NAME[name], EXAMPLES[name]
    markers = literal_markers(grammar, [text])
    got = turns_of(
        text, markers, anchored=grammar.anchored, ends=grammar.ends, preamble=grammar.preamble, merge=grammar.merge
    )
    assert [role for role, _ in got][-2:] == ["user", "assistant"], got
    assert got[-1][1] == "Seven." and got[-2][1] == "Name a prime.", got  # the end tokens are stripped
    chosen = best_grammar([text] * 3)
    assert chosen is not None and chosen[2] == 3  # some grammar reads every row as a dialogue


def test_the_modules_that_name_template_text_take_it_from_the_grammars():
    assert turns.END_TOKENS == END_TOKENS and set(END_TOKENS) == {t for g in GRAMMARS for t in g.ends}
    assert columns.CHATML.pattern == BY_NAME["chatml"].markers[0][0]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_a_template_s_text_left_inside_an_answer_is_flagged_as_markup(name):
    found = find_markup(f"Sure, here it is.\n{EXAMPLES[name].strip()}", "assistant")  # a rendering left in it
    assert found, name


@pytest.mark.parametrize("token", END_TOKENS)
def test_every_end_token_left_at_an_answer_s_edge_is_flagged(token):
    """At the end, or at the start for a start-of-sequence token (`<s>`, `<bos>`)."""
    assert find_markup(f"Seven is a prime.{token}", "assistant") or find_markup(f"{token}Seven.", "assistant"), token
