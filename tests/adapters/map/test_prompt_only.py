"""Prompts alone (issue 33 follow-up): one text column of requests and no answers maps in regenerate mode, one user
turn per row; a single-column corpus of documents stays refused as plain text. Each side on look-alikes of the
other: long prompts with pasted code, prompts in other scripts, a `text` column that asks on every row; documents
under a request name, reviews that ask now and then, intent queries with class labels, source files."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.infer.detect import detect
from adapters.infer.infer import AdapterRefused, build_proposal
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.spec import AdapterSpec, SourceSpec

REQUESTS = [
    "How do I make a Python script retry a failed HTTP request with backoff?",
    "Write a SQL query that returns the ten customers with the most orders last month.",
    "Explain the difference between a process and a thread, with an example.",
    "Can you help me write a regular expression that matches ISO dates?",
    "Give me a checklist for reviewing a pull request that touches authentication.",
    "What does `git rebase --onto` do, and when should I use it?",
    "Please convert this loop into a list comprehension:\n\nout = []\nfor x in xs:\n    if x > 0:\n        out.append(x)",
    "Summarize the trade-offs of microservices for a team of five engineers.",
    "I need a bash command that finds files larger than 100 MB under /var.",
    "Describe how a hash map handles collisions.",
    "Why does my React component render twice in development mode?",
    "Translate this function from JavaScript to Go:\n\nfunction add(a, b) { return a + b; }",
]
PROSE = (
    "The bridge was completed in the spring after three years of work by a crew of about two hundred people. "
    "Engineers chose steel over concrete for the main span because the riverbed could not carry the weight. "
    "Traffic on the old ferry route fell by half within a year, and the ferry company closed its last line."
)


def _raw(rows: list[dict[str, Any]]) -> list[RawRow]:
    return [RawRow(i, r, None) for i, r in enumerate(rows)]


def _proposed(rows: list[dict[str, Any]], card: str = "") -> AdapterSpec:
    source = SourceSpec(repo_id="lab/x", revision="0" * 40, config="default", split="train", data_files=["d.parquet"])
    return build_proposal(detect(rows, card_text=card), list(enumerate(rows)), source, card).spec


def _refusal(rows: list[dict[str, Any]], card: str = "") -> str:
    with pytest.raises(AdapterRefused) as exc:
        _proposed(rows, card)
    assert exc.value.verdict == "plain_text"
    return str(exc.value)


def _assert_prompt_set(spec: AdapterSpec, rows: list[dict[str, Any]], column: str) -> None:
    assert spec.mode == "regenerate" and spec.layout == "columns"
    assert spec.columns is not None and spec.columns.prompt == [column] and spec.columns.response is None
    result = run_contract(spec, _raw(rows))
    assert result.passed, result.summary()


@pytest.mark.parametrize("column", ["prompt", "instruction", "question", "user_prompt"])
def test_a_request_named_column_alone_is_a_prompt_set(column: str) -> None:
    rows = [{"id": f"r{i}", column: p} for i, p in enumerate(REQUESTS)]
    spec = _proposed(rows, "A set of prompts.\n\ntask_categories: text-generation\ntags: instruction")
    _assert_prompt_set(spec, rows, column)
    assert "rows ask" in spec.reasons["columns"] and "regenerate mode" in spec.reasons["columns"]


def test_each_row_is_one_user_turn_with_the_whole_request() -> None:
    from adapters.map.apply import RowMapper

    rows = [{"prompt": p, "task_category": "Coding"} for p in REQUESTS]
    spec = _proposed(rows)
    (record,) = RowMapper(spec).apply(6, rows[6])
    assert [(m.role, m.content) for m in record.messages] == [("user", REQUESTS[6])]


def test_prompts_in_other_scripts_under_a_request_name_map() -> None:
    """No English cue in the rows (no interrogative, no `?` in some): the request name is the evidence."""
    rows = [{"instruction": f"用Python写一个函数，计算列表{i}中所有正数的和。"} for i in range(6)]
    rows += [{"instruction": f"Объясни, как работает сборщик мусора в Java, пример {i}."} for i in range(6)]
    _assert_prompt_set(_proposed(rows), rows, "instruction")


def test_a_card_naming_the_target_cannot_make_prompts_alone_native() -> None:
    rows = [{"prompt": p} for p in REQUESTS]
    spec = _proposed(rows, "Prompts we sent to Kimi-K2 for evaluation.")
    assert spec.mode == "regenerate"
    assert "prompts alone" in spec.reasons["mode"]


def test_a_text_column_that_asks_on_every_row_is_a_prompt_set_marked_for_review() -> None:
    rows = [{"conversation_hash": f"{i:08x}", "text": p} for i, p in enumerate(REQUESTS)]
    spec = _proposed(rows)
    _assert_prompt_set(spec, rows, "text")
    assert "columns" in spec.needs_review


def test_a_passage_followed_by_its_request_asks() -> None:
    """Long prompts with the request at the end (a pasted passage, then "Summarize the text above.")."""
    rows = [{"prompt": f"{PROSE}\n\n{PROSE}\n\nSummarize the text above in {i + 2} sentences."} for i in range(12)]
    _assert_prompt_set(_proposed(rows), rows, "prompt")


def test_a_request_split_over_two_columns_is_one_prompt_not_a_prompt_and_its_answer() -> None:
    rows = []
    for p in REQUESTS:
        words = p.split(" ")
        rows.append({"prompt": " ".join(words[:4]), "prompt_rest": " ".join(words[4:])})
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.response is None
    assert spec.columns.prompt == ["prompt", "prompt_rest"] and spec.columns.continues == ["prompt_rest"]
    assert run_contract(spec, _raw(rows)).passed


def test_a_completion_task_keeps_its_continuation_as_the_answer() -> None:
    """A prefix and the prose that continues it join into text that asks nothing: a completion task."""
    rows = [
        {"prefix": f"The bridge over river {i} was completed in the spring after", "completion": PROSE.lower()}
        for i in range(12)
    ]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.response == "completion"


# -- the other side: documents stay refused as plain text --------------------------------------------


def test_web_text_stays_plain_text_with_its_evidence() -> None:
    rows = [{"url": f"https://ex.org/{i}", "text": f"{PROSE}\n\n{PROSE}\n\n{PROSE}"} for i in range(12)]
    message = _refusal(rows)
    assert "0/12 rows ask" in message and "the rows read as documents" in message


def test_documents_under_a_request_name_stay_plain_text() -> None:
    rows = [{"prompt": f"{PROSE}\n\n{PROSE}\n\nChapter {i} ends here."} for i in range(12)]
    assert "the rows read as documents" in _refusal(rows)


def test_reviews_that_ask_now_and_then_stay_plain_text() -> None:
    rows = [{"text": ("Why did nobody tell me? " if i % 4 == 0 else "") + PROSE} for i in range(12)]
    message = _refusal(rows)
    assert "3/12 rows ask" in message and "document name" in message


def test_queries_with_class_labels_are_a_classification_set() -> None:
    """Every row asks, but a label column classifies each one: intent classification, refused with the label."""
    rows = [{"text": p, "label": i % 3} for i, p in enumerate(REQUESTS)]
    assert "column 'label' labels each text" in _refusal(rows)


def test_source_files_stay_plain_text() -> None:
    code = (
        "import os\n\ndef walk(root):\n    for name in os.listdir(root):\n        yield name\n\nclass Tree:\n    pass\n"
    )
    rows = [{"path": f"src/m{i}.py", "content": code.replace("walk", f"walk{i}")} for i in range(12)]
    assert "source code" in _refusal(rows)


def test_a_corpus_card_vetoes_a_neutral_name() -> None:
    """Short sentences that happen to open with a verb, named neutrally, in a card that says pretraining corpus."""
    rows = [{"sentence_text": f"Make sure the valve {i} is closed before the pump starts."} for i in range(12)]
    assert "the card speaks of" in _refusal(rows, "A pretraining corpus of maintenance manuals.")


def test_a_card_that_names_documents_as_the_topic_does_not_veto_questions() -> None:
    """ "Questions about news articles": the card's word is the questions' topic, not the rows' kind. Every row asks,
    so the column is prompts; a neutral-named column of prose under the same card stays plain text."""
    card = "Questions people asked about news articles and legal documents, gathered from reader forums."
    rows = [{"input": q} for q in REQUESTS]
    _assert_prompt_set(_proposed(rows, card), rows, "input")
    prose = [{"input": PROSE.replace("spring", f"spring of year {i}")} for i in range(12)]
    assert "the card speaks of 'articles'" in _refusal(prose, card)


# -- columns beside the prompts that are not its answer ----------------------------------------------


def test_a_system_prompt_column_is_the_system_turn_not_the_answer() -> None:
    from adapters.map.apply import RowMapper

    personas = ["You are a senior Python reviewer.", "You are a concise shell expert."]
    rows = [{"system_prompt": personas[i % 2], "prompt": p} for i, p in enumerate(REQUESTS)]
    spec = _proposed(rows)
    _assert_prompt_set(spec, rows, "prompt")
    assert spec.system_field == "system_prompt"
    (record,) = RowMapper(spec).apply(1, rows[1])
    assert [(m.role, m.content) for m in record.messages] == [("system", personas[1]), ("user", REQUESTS[1])]


def _annotated(with_response: bool) -> list[dict[str, Any]]:
    return [
        {
            "instruction": p,
            **({"response": f"Here is how to do step {i}: {PROSE}"} if with_response else {}),
            "intent": f"The user wants to get help with task {i}.",
            "knowledge": f"To solve this problem, the models need to know topic {i} in depth.",
            "quality_explanation": "The user query is clear and specific.",
        }
        for i, p in enumerate(REQUESTS)
    ]


def test_judge_annotations_of_the_request_are_left_out_by_name_not_read_as_its_answer() -> None:
    rows = _annotated(with_response=False)
    spec = _proposed(rows)
    _assert_prompt_set(spec, rows, "instruction")
    assert spec.drop is not None and {"intent", "knowledge", "quality_explanation"} <= set(spec.drop)
    assert "annotation of the request (12/12 rows" in spec.drop["intent"]


def test_annotations_beside_a_real_answer_leave_the_answer_in_place() -> None:
    rows = _annotated(with_response=True)
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.prompt == ["instruction"] and spec.columns.response == "response"
    assert run_contract(spec, _raw(rows)).passed


def test_answers_that_open_on_the_query_stay_answers() -> None:
    """SQL answers that begin "The query returns ..." talk about a query, not about the request: still answers."""
    rows = [
        {"question": p, "answer": f"The query returns the rows for case {i}. {PROSE}"} for i, p in enumerate(REQUESTS)
    ]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.response == "answer" and not (spec.drop or {}).get("answer")


def test_a_code_answer_after_a_request_without_a_full_stop_stays_the_answer() -> None:
    """MBPP-style: "Write a function to ..." with no full stop, then `def ...` (lower-case): a request and its
    answer, never one request split over two columns."""
    tasks = ["reverse a string", "sum a list", "find the maximum", "count vowels", "merge two lists", "sort pairs"]
    rows = [
        {
            "prompt": f"Write a python function to {t} in case {i}",
            "solution": f"def solve_{i}(xs):\n    return xs[::-1]",
        }
        for i, t in enumerate(tasks * 2)
    ]
    spec = _proposed(rows)
    assert spec.columns is not None and spec.columns.response == "solution" and spec.columns.prompt == ["prompt"]
    assert run_contract(spec, _raw(rows)).passed


def _statement_prompts() -> list[dict[str, Any]]:
    """A chat-log dump: half the prompts ask in form, half are statements or pasted text the user sent."""
    said = [
        f"My build fails on step {i} with exit code 137 after the tests finish." if i % 2 else REQUESTS[i]
        for i in range(12)
    ]
    return [{"content": s} for s in said]


def test_a_card_that_says_prompts_reads_a_dump_where_half_the_rows_ask() -> None:
    rows = _statement_prompts()
    spec = _proposed(rows, "A collection of user prompts sent to a coding assistant; responses were removed.")
    _assert_prompt_set(spec, rows, "content")
    assert "the card speaks of" in spec.reasons["columns"]


def test_the_same_rows_without_that_card_stay_plain_text() -> None:
    """A card that only mentions questions in passing ("Questions? Open an issue.") is no evidence."""
    message = _refusal(_statement_prompts(), "Questions? Open an issue on the tracker.")
    assert "6/12 rows ask" in message and "document name" in message


@pytest.mark.parametrize("labels", [[0, 1], [True, False], [1, 2, 3, 4, 5]])
def test_questions_with_a_class_label_or_score_are_still_questions_to_answer(labels: list[Any]) -> None:
    """Question classification (TREC-style) or a quality score beside a request name: the label is metadata of the
    request, never a KTO judgement of an answer that does not exist."""
    rows = [{"question": p, "label": labels[i % len(labels)]} for i, p in enumerate(REQUESTS)]
    spec = _proposed(rows)
    _assert_prompt_set(spec, rows, "question")
    assert spec.label_field is None


def test_requests_in_other_scripts_read_as_asking_under_a_neutral_name() -> None:
    """No request name and no question mark: openings (请 / 如何 / напиши) and verb-final request endings
    (설명해 주세요 / 教えてください) are the evidence."""
    said = [
        "请用Python写一个函数，计算列表中所有正数的和。",
        "如何在Linux上查找大于100MB的文件。",
        "写一个SQL查询，返回订单最多的十位客户。",
        "帮我检查这段代码里的内存泄漏。",
        "Напиши функцию сортировки списка.",
        "Объясни, как работает сборщик мусора.",
        "Помоги настроить кэширование в nginx.",
        "파이썬 데코레이터를 설명해 주세요.",
        "이 SQL 쿼리를 더 빠르게 만들어 주세요.",
        "Gitのrebaseとmergeの違いを教えてください。",
        "このPythonコードのバグを直してください。",
        "Dockerのレイヤーについて説明してください。",
    ]
    rows = [{"utterance": s} for s in said]
    spec = _proposed(rows)
    _assert_prompt_set(spec, rows, "utterance")
    assert "12/12 rows ask" in spec.reasons["columns"]


def test_statements_in_other_scripts_stay_plain_text() -> None:
    said = [
        "这座桥在春天建成，工程持续了三年。",
        "Мост был построен весной после трёх лет работы.",
        "다리는 봄에 완공되었다.",
    ]
    rows = [{"utterance": f"({i}) {s}"} for i, s in enumerate(said * 4)]
    assert "0/12 rows ask" in _refusal(rows)
