"""An answer split over two columns (issue 33, the last mutation survivor): its opening, a long prose column
after the request, is read as the answer's first half because the response column picks its sentence up; and
the honest neighbours (a completion task, a request to continue, an input that ends its sentence) keep the
prompt they have."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.map.apply import RowMapper
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.spec import AdapterSpec, SourceSpec

TOPICS = ["binary search", "rate limiting", "Docker layers", "unit tests", "HTTP caching", "regular expressions"]
OPENING = "Start from the smallest case that shows the problem with {t}, measure before you change anything, and"
TAIL = "change one thing at a time so the cause stays visible; then write the regression test for case {i}."


def _raw(rows: list[dict[str, Any]]) -> list[RawRow]:
    return [RawRow(i, r, None) for i, r in enumerate(rows)]


def _proposed(rows: list[dict[str, Any]]) -> AdapterSpec:
    source = SourceSpec(repo_id="lab/x", revision="0" * 40, config="default", split="train", data_files=["d.jsonl"])
    return build_proposal(detect(rows), list(enumerate(rows)), source, "").spec


def _split_answer_rows(long_tail: bool = False) -> list[dict[str, Any]]:
    """The opening longer than the rest (read as the response, the rest unread), or the rest longer (read as
    the response, the opening taken into the prompt)."""
    more = " Keep the failing input as a fixture, and rerun it under load before you call it fixed." * 3
    return [
        {
            "topic": f"How do I debug {TOPICS[i % 6]} in a service that fails only under load?",
            "essay": OPENING.format(t=TOPICS[i % 6]),
            "essay_rest": TAIL.format(i=i) + (more if long_tail else ""),
        }
        for i in range(12)
    ]


@pytest.mark.parametrize("long_tail", [False, True])
def test_the_answers_opening_leaves_the_prompt_and_opens_the_answer(long_tail: bool) -> None:
    rows = _split_answer_rows(long_tail)
    spec = _proposed(rows)
    assert spec.columns is not None
    assert spec.columns.prompt == ["topic"] and spec.columns.response_head == "essay", spec.columns
    assert spec.columns.response == "essay_rest"
    assert "continues the sentence of 'essay' in 12/12 rows" in spec.reasons["columns"]
    assert "columns" in spec.needs_review
    native = spec.model_copy(update={"mode": "native"})
    (record,) = RowMapper(native).apply(3, rows[3])
    assert [m.role for m in record.messages] == ["user", "assistant"]
    assert record.messages[0].content == rows[3]["topic"]
    assert record.messages[1].content == f"{rows[3]['essay']} {rows[3]['essay_rest']}"
    assert run_contract(spec, _raw(rows)).passed


def test_a_spec_that_reads_the_opening_as_prompt_fails_with_one_line() -> None:
    rows = _split_answer_rows()
    spec = _proposed(rows)
    assert spec.columns is not None
    wrong = spec.model_copy(
        update={"columns": spec.columns.model_copy(update={"prompt": ["topic", "essay"], "response_head": None})}
    )
    result = run_contract(wrong, _raw(rows))
    assert "answer_split" in {c.name for c in result.failures()}
    assert "continues the sentence of prompt column 'essay' in 12/12 rows" in result.summary()


def test_a_spec_that_leaves_the_answers_rest_unread_fails_with_one_line() -> None:
    rows = _split_answer_rows()
    spec = _proposed(rows)
    assert spec.columns is not None
    wrong = spec.model_copy(
        update={"columns": spec.columns.model_copy(update={"response": "essay", "response_head": None})}
    )
    result = run_contract(wrong, _raw(rows))
    assert "answer_split" in {c.name for c in result.failures()}
    assert "'essay_rest' continues the sentence of the answer column 'essay' in 12/12" in result.summary()


def test_a_completion_task_keeps_its_prefix_as_the_prompt() -> None:
    """prefix → continuation: the answer continues the only prompt column, which is what the task asks."""
    rows = [{"prefix": OPENING.format(t=TOPICS[i % 6]), "continuation": TAIL.format(i=i)} for i in range(12)]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.response_head is None
    assert spec.columns.prompt == ["prefix"]
    assert "answer_split" not in {c.name for c in run_contract(spec, _raw(rows)).failures()}


def _no_head(make: Any) -> AdapterSpec:
    """The proposal for twelve rows of `make(i)`, which must read no answer opening and pass answer_split."""
    rows = [make(i) for i in range(12)]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.response_head is None, spec.columns
    assert "answer_split" not in {c.name for c in run_contract(spec, _raw(rows)).failures()}
    return spec


def test_a_request_to_continue_keeps_the_continued_text_in_the_prompt() -> None:
    spec = _no_head(
        lambda i: {
            "instruction": f"Continue the advice about {TOPICS[i % 6]} in the same voice, one sentence.",
            "passage": OPENING.format(t=TOPICS[i % 6]),
            "output": TAIL.format(i=i),
        }
    )
    assert spec.columns is not None and spec.columns.prompt == ["instruction", "passage"]


def test_an_input_that_ends_its_sentence_is_not_an_answer_head() -> None:
    """Alpaca-style instruction, input and output: the input is whole; an output that happens to start lower-case
    continues nothing."""
    spec = _no_head(
        lambda i: {
            "instruction": f"Explain what the log line about {TOPICS[i % 6]} means.",
            "input": f"worker {i} restarted after a timeout.",
            "output": TAIL.format(i=i),
        }
    )
    assert spec.columns is not None and "input" in spec.columns.prompt


def test_a_tail_that_continues_the_request_is_the_requests_rest_not_the_answers() -> None:
    """The request cut over two columns, its answer ending on a code block: the lower-case column after the answer
    carries on the request (which column a tail continues decides), and a closed fence is no open sentence."""
    spec = _no_head(
        lambda i: {
            "instruction": f"Could you show me how {TOPICS[i % 6]} works for",
            "response": f"Here is a small version for case {i}.\n\n```python\ndef f(xs):\n    return xs[:{i}]\n```",
            "details": f"a new engineer on team {i} who writes Python?",
        }
    )
    assert spec.columns is not None and spec.columns.response == "response"


def test_response_head_is_hashed_only_when_set_and_must_stand_apart() -> None:
    """Specs approved before the field existed keep their hash; a head inside the prompt is a spec error."""
    spec = _proposed(_split_answer_rows())
    assert spec.columns is not None
    assert spec.hashed_payload()["columns"]["response_head"] == "essay"
    unset = spec.model_copy(update={"columns": spec.columns.model_copy(update={"response_head": None})})
    assert "response_head" not in unset.hashed_payload()["columns"]
    with pytest.raises(ValueError, match="response_head"):
        type(spec.columns).model_validate({**spec.columns.model_dump(), "prompt": ["topic", "essay"]})


@pytest.mark.parametrize(
    "data, code",
    [
        ("the words hello brave new world number {i}", "def reverse_words(s):\n    return ' '.join(s.split()[::-1])"),
        ("[{i}, 3, 1, 2]", "arr = [{i}, 3, 1, 2]\narr.sort()\nprint(arr)"),
        ("a list of {i} user names read from the file users dot txt", "import csv\nnames = list(csv.reader(f))"),
    ],
)
def test_a_data_input_before_a_code_answer_is_no_answer_head(data: str, code: str) -> None:
    """CodeAlpaca-style: an input that stops without punctuation and an answer of code that starts lower-case
    read as one text by the looser prompt-split rule; they are a request's data and its answer."""
    spec = _no_head(
        lambda i: {
            "instruction": f"Write Python code for the task below and keep it short (case {i}).",
            "input": data.format(i=i),
            "output": code.format(i=i),
        }
    )
    assert spec.columns is not None and spec.columns.response == "output"
