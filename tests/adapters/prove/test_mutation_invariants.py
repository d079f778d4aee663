"""The invariants behind the mutation bench's last survivors, on data of their own: a sentence split over two
prompt columns, CJK requests that read as requests (a CJK swap is caught), and column prompts that state no
task. Each is checked on a corrupt case and on its honest neighbour, which must still pass."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.map.apply import RowMapper
from adapters.prove.contract import ContractResult, run_contract
from adapters.prove.plausibility import _QUESTION
from adapters.read.source import RawRow
from adapters.spec import AdapterSpec, SourceSpec
from catalog.errors import DraftsetError
from eval.bench.mutation_kill import CORRUPTIONS, mutate_family
from eval.bench.schema_scoreboard import DEFAULT_CORPUS
from tests.kits.adapters import make_spec

TOPICS = ["binary search", "rate limiting", "Docker layers", "unit tests", "HTTP caching", "regular expressions"]
ANSWER = (
    "Start from the smallest case that shows it, measure before changing anything, and change one thing at a "
    "time so the cause stays visible; then write the regression test."
)


def _raw(rows: list[dict[str, Any]]) -> list[RawRow]:
    return [RawRow(i, r, None) for i, r in enumerate(rows)]


def _proposed(rows: list[dict[str, Any]]) -> AdapterSpec:
    source = SourceSpec(
        repo_id="lab/x", revision="0" * 40, config="default", split="train", data_files=["data/train.jsonl"]
    )
    return build_proposal(detect(rows), list(enumerate(rows)), source, "").spec


def _failed(result: ContractResult) -> set[str]:
    return {c.name for c in result.failures()}


def _split_rows() -> list[dict[str, Any]]:
    """A request cut mid-sentence: its second half in another column (after the answer, as exports append)."""
    return [
        {
            "title": f"Could you walk me through {TOPICS[i % 6]} for",
            "answer": f"{ANSWER} (case {i})",
            "rest": f"a service with {i + 2} users and a tight budget?",
        }
        for i in range(12)
    ]


def test_a_sentence_split_over_two_columns_is_joined_as_one_and_a_blank_line_between_fails() -> None:
    rows = _split_rows()
    spec = _proposed(rows)
    assert spec.layout == "columns" and spec.columns is not None
    assert spec.columns.prompt == ["title", "rest"] and spec.columns.continues == ["rest"]
    (record,) = RowMapper(spec).apply(3, rows[3])
    assert (
        record.messages[0].content
        == "Could you walk me through unit tests for a service with 5 users and a tight budget?"
    )
    assert run_contract(spec, _raw(rows)).passed
    # the same columns joined with a blank line (a hand-written or LLM spec): one line naming the column
    blank = spec.model_copy(update={"columns": spec.columns.model_copy(update={"continues": []})})
    result = run_contract(blank, _raw(rows))
    assert "prompt_split" in _failed(result)
    assert "'rest' continues the sentence of the column before it in 12/12 rows" in result.summary()


def test_an_instruction_with_its_input_keeps_the_blank_line() -> None:
    """Alpaca-style: the instruction ends its sentence; a lower-case input is text to work on, not a continuation."""
    rows = [
        {
            "instruction": f"Rewrite the sentence about {TOPICS[i % 6]} in the passive voice:",
            "input": f"we test {i} paths",
            "output": ANSWER,
        }
        for i in range(12)
    ]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.prompt == ["instruction", "input"] and spec.columns.continues == []
    assert "\n\nwe test 4 paths" in RowMapper(spec).apply(4, rows[4])[0].messages[0].content
    with pytest.raises(DraftsetError, match="follow no other column"):
        make_spec(layout="columns", columns={"prompt": ["instruction", "input"], "continues": ["instruction"]})


def test_a_template_instruction_without_a_full_stop_keeps_the_blank_line() -> None:
    """One instruction on every row, ending on no full stop, over lower-cased inputs (SST-2 in a template): the
    instruction is a field of its own, not the first half of each row's sentence."""
    rows = [
        {
            "instruction": "Classify the sentiment of this review as positive or negative",
            "input": f"it 's a charming and often affecting journey through {TOPICS[i % 6]} , take {i}",
            "output": ANSWER,
        }
        for i in range(12)
    ]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.prompt == ["instruction", "input"] and spec.columns.continues == []
    assert "negative\n\nit 's a charming" in RowMapper(spec).apply(4, rows[4])[0].messages[0].content
    assert "prompt_split" not in _failed(run_contract(spec, _raw(rows)))


@pytest.mark.parametrize(
    "text",
    [
        "猫と犬の違いを説明してください。",
        "この文を英語に訳しなさい",
        "서울에 대해 알려주세요.",
        "이 코드를 고쳐 주세요",
        "한국의 수도는 어디입니까",
        "이 문제를 어떻게 풀어야 할까요",
        "你会说中文吗",
        "这段代码有什么问题呢？",
    ],
)
def test_cjk_requests_read_as_requests(text: str) -> None:
    assert _QUESTION.search(text)


@pytest.mark.parametrize(
    "text", ["猫は独立心が強く、犬は人に忠実です。", "서울은 한국의 수도입니다.", "东京是日本的首都。"]
)
def test_cjk_statements_do_not(text: str) -> None:
    assert not _QUESTION.search(text)


def _review_rows(instruction: bool, field_label: bool = True) -> list[dict[str, Any]]:
    rows = []
    for i in range(12):
        text = f"The {TOPICS[i % 6]} chapter was {'clear and useful' if i % 2 else 'long and confusing'} for case {i}."
        row: dict[str, Any] = {"inputs": f"Review: {text}" if field_label else text, "targets": ["bad", "good"][i % 2]}
        if instruction:
            row = {"definition": "In this task you are given a review. Classify it as good or bad.", **row}
        rows.append(row)
    return rows


def _columns(prompt: list[str]) -> AdapterSpec:
    return make_spec(layout="columns", columns={"prompt": prompt, "response": "targets"})


def test_column_prompts_that_state_no_task_fail_and_with_their_instruction_pass() -> None:
    slot = run_contract(_columns(["inputs"]), _raw(_review_rows(instruction=False)))
    assert "prompt_unasked" in _failed(slot) and "field label 'Review:'" in slot.summary()
    unlabelled = run_contract(_columns(["inputs"]), _raw(_review_rows(instruction=False, field_label=False)))
    assert "prompt_unasked" in _failed(unlabelled) and "2 label(s)" in unlabelled.summary()
    stated = run_contract(_columns(["definition", "inputs"]), _raw(_review_rows(instruction=True)))
    assert "prompt_unasked" not in _failed(stated)


def test_a_label_the_texts_happen_to_say_does_not_state_the_task() -> None:
    """Reviews that say "good" or "bad" in passing name no label set; a task that lists both does."""
    rows = [
        dict(r, inputs=f"{r['inputs']} Overall {['bad', 'good'][i % 2]}.")
        for i, r in enumerate(_review_rows(instruction=False, field_label=False))
    ]
    assert "prompt_unasked" in _failed(run_contract(_columns(["inputs"]), _raw(rows)))
    asked = [dict(r, inputs=f"Good or bad? {r['inputs']}") for r in rows]
    assert "prompt_unasked" not in _failed(run_contract(_columns(["inputs"]), _raw(asked)))


def test_a_request_behind_a_field_label_states_its_task() -> None:
    rows = [
        {"inputs": f"Problem: Compute {i} + {i + 1} and explain the steps", "targets": str(2 * i + 1)}
        for i in range(12)
    ]
    assert "prompt_unasked" not in _failed(run_contract(_columns(["inputs"]), _raw(rows)))


def test_texts_answered_by_free_text_are_not_taken_for_a_missing_task() -> None:
    """Prompts that ask nothing but carry no tell (no shared field label, answers not labels): left alone."""
    rows = [
        {
            "article": f"The {TOPICS[i % 6]} team shipped release {i} after a week of load tests.",
            "targets": f"{ANSWER} {i}",
        }
        for i in range(12)
    ]
    assert "prompt_unasked" not in _failed(run_contract(_columns(["article"]), _raw(rows)))


@pytest.mark.parametrize(
    ("family", "mutation", "outcome"),
    [
        ("unnamed-essay", "move_text", "equivalent"),  # inference joins the halves as one sentence
        ("unnamed-reply", "move_text", "equivalent"),
        ("natural-instructions-definition", "drop_turn", "killed"),  # prompt_unasked
        ("cjk-alpaca-short", "swap_prompt_answer", "killed"),  # answer_shorter, now reading CJK requests
    ],
)
def test_the_benchs_former_survivors(family: str, mutation: str, outcome: str) -> None:
    result = mutate_family(DEFAULT_CORPUS / family, mutation, CORRUPTIONS[mutation])
    assert result.outcome == outcome, result.detail
