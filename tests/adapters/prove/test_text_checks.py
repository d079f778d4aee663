"""Checks that read what the text says and fail on a fraction of rows (issue 33, item 6). Each corruption on a
third of the rows fails its check with a count and examples; the clean rows, and honest look-alikes (a bullet
list, code answers to Chinese prompts, a translation request, SWE-agent observations as user turns), do not."""

from __future__ import annotations

import html

import pytest

from adapters.prove.text_checks import script, text_problems
from adapters.records import Conversation

PROMPTS = [f"How do I stop test number {i} from failing only on the CI runners?" for i in range(12)]
ANSWERS = [
    f"Freeze the clock in fixture {i}, then rerun the suite under load to confirm the timing was the cause."
    for i in range(12)
]
SYSTEM = "You are a careful assistant. Answer precisely and explain your reasoning briefly."


def _rec(i: int, turns: list[dict], mode: str = "native") -> Conversation:
    return Conversation.model_validate(
        {
            "id": f"r{i}",
            "source": {"repo_id": "o/d", "revision": "r", "config": "default", "split": "train", "row_index": i},
            "category": "coding",
            "mode": mode,
            "messages": turns,
        }
    )


def _chat(i: int, prompt: str | None = None, answer: str | None = None, system: bool = False) -> Conversation:
    turns = [{"role": "system", "content": SYSTEM}] if system else []
    turns += [{"role": "user", "content": prompt or PROMPTS[i]}, {"role": "assistant", "content": answer or ANSWERS[i]}]
    return _rec(i, turns)


def _names(records: list[Conversation]) -> dict[str, dict]:
    return {p["name"]: p for p in text_problems(records)}


def test_clean_rows_raise_nothing() -> None:
    assert _names([_chat(i, system=i % 2 == 0) for i in range(12)]) == {}


CORRUPT = {
    "answer_echo": lambda i: _chat(i, answer=f"{PROMPTS[i]}\n\n{ANSWERS[i]}"),
    "answer_wrapped": lambda i: _chat(i, answer=f"<answer>{ANSWERS[i]}</answer>"),
    "answer_cut": lambda i: _chat(i, answer=" ".join(ANSWERS[i].split()[:11])),
    "escaped_markup": lambda i: _chat(i, answer=html.escape(f"<p>{ANSWERS[i]}</p>")),
    "answer_language": lambda i: _chat(
        i, answer="首先用最小的输入复现这个问题，然后逐步缩小范围，直到找到真正的原因。"
    ),
    "system_in_user": lambda i: _chat(i, prompt=f"{SYSTEM}\n\n{PROMPTS[i]}"),
}


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_a_third_of_rows_corrupted_fails_its_check_with_count_and_examples(name: str) -> None:
    records = [CORRUPT[name](i) if i % 3 == 0 else _chat(i, system=name == "system_in_user") for i in range(12)]
    found = _names(records)
    assert name in found, found
    assert found[name]["count"] == 4 and found[name]["rows"][:2] == [0, 3]
    assert found[name]["level"] == "error"


def test_one_odd_row_is_not_a_dataset_problem() -> None:
    records = [CORRUPT["answer_cut"](0)] + [_chat(i) for i in range(1, 12)]
    assert "answer_cut" not in _names(records)


def test_honest_look_alikes_pass() -> None:
    bullets = "Three things help here:\n- freeze the clock in the fixture\n- pin the seed\n- rerun under load"
    code = "可以这样写：\n```python\ndef first(xs):\n    return xs[0] if xs else None\n```"
    rows = [
        _chat(0, answer=bullets),
        _chat(1, answer=bullets),
        _chat(2, prompt="这个函数怎么写？请给出代码。", answer=code),
        _chat(3, prompt="这个函数怎么写？请给出代码。", answer=code),
        _chat(4, prompt="Translate into Chinese: the build is green again.", answer="构建又通过了。"),
        _chat(5, prompt="Translate into Chinese: the tests pass.", answer="测试通过了。"),
    ]
    assert _names(rows) == {}


def _calls(i: int, result: bool, then: str = "assistant") -> Conversation:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "run_shell", "arguments": '{"command": "ls"}'}}
    turns = [
        {"role": "user", "content": PROMPTS[i]},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    if result:
        turns.append({"role": "tool", "content": "src tests", "tool_call_id": f"c{i}", "name": "run_shell"})
    turns.append({"role": then, "content": ANSWERS[i]})
    return _rec(i, turns)


def test_a_deleted_tool_result_fails_but_an_observation_as_user_passes() -> None:
    deleted = [_calls(i, result=i % 3 != 0) for i in range(12)]
    assert _names(deleted)["call_unanswered"]["count"] == 4
    observations = [_calls(i, result=False, then="user") for i in range(12)]
    assert "call_unanswered" not in _names(observations)


def test_regenerate_mode_reads_only_the_context() -> None:
    final_wrapped = [
        _rec(
            i,
            [{"role": "user", "content": PROMPTS[i]}, {"role": "assistant", "content": f"<a>{ANSWERS[i]}</a>"}],
            "regenerate",
        )
        for i in range(12)
    ]
    assert text_problems(final_wrapped, answers_trained=False) == []
    assert any(p["name"] == "answer_wrapped" for p in text_problems(final_wrapped, answers_trained=True))


def test_script_reads_the_dominant_writing_system() -> None:
    assert script("Freeze the clock") == "LATIN"
    assert script("首先复现这个问题") == "CJK"
    assert script("テストを直す") == "CJK"
    assert script("12345 !!") is None


def _multi(i: int, first_answer: str, final_answer: str) -> Conversation:
    turns = [
        {"role": "user", "content": PROMPTS[i]},
        {"role": "assistant", "content": first_answer},
        {"role": "user", "content": PROMPTS[(i + 1) % 12]},
        {"role": "assistant", "content": final_answer},
    ]
    return _rec(i, turns, "regenerate")


def _single(i: int, answer: str) -> Conversation:
    return _rec(i, [{"role": "user", "content": PROMPTS[i]}, {"role": "assistant", "content": answer}], "regenerate")


def test_regenerate_one_damaged_kept_answer_is_judged_with_the_final_answers() -> None:
    """A third of the rows echo their prompt; only one of them is multi-turn, so one echoed answer reaches the
    context kept for regeneration. The final answers show the export's damage: the kept one is not excused."""
    echo = lambda i: f"{PROMPTS[i]}\n\n{ANSWERS[i]}"  # noqa: E731
    rows = [_multi(0, echo(0), ANSWERS[0])] + [
        _single(i, echo(i)) if i % 3 == 0 else _multi(i, ANSWERS[i], ANSWERS[i]) for i in range(1, 12)
    ]
    found = {p["name"]: p for p in text_problems(rows, answers_trained=False)}
    assert "answer_echo" in found, found
    assert found["answer_echo"]["rows"][0] == 0  # the row whose kept context is damaged leads the examples
    assert "1 in the context kept for regeneration" in found["answer_echo"]["detail"]


def test_regenerate_one_damaged_kept_answer_alone_passes() -> None:
    """The false-alarm side: one echoed earlier answer and clean final answers everywhere is one odd row."""
    echo = f"{PROMPTS[0]}\n\n{ANSWERS[0]}"
    rows = [_multi(0, echo, ANSWERS[0])] + [_multi(i, ANSWERS[i], ANSWERS[i]) for i in range(1, 12)]
    assert text_problems(rows, answers_trained=False) == []


def test_a_persona_paragraph_pasted_on_some_rows_fails_without_any_system_row() -> None:
    """The export flattened every system turn into the user's text: no row keeps a system role to compare."""
    rows = [_chat(i, prompt=f"{SYSTEM}\n\n{PROMPTS[i]}") if i % 3 == 0 else _chat(i) for i in range(12)]
    found = _names(rows)
    assert found["system_in_user"]["count"] == 4 and found["system_in_user"]["rows"][:2] == [0, 3]


@pytest.mark.parametrize(
    "head, rest",
    [
        # Natural-Instructions' task definitions: handed an input, or pointing at it
        ("You are given a product review. Classify it as positive or negative.", "Input: {p}"),
        ("You are given a short paragraph. Write a title for it in at most eight words.", "{p}"),
        ("You are an expert translator. Translate the following sentence into French.", "{p}"),
        ("In this task, you are asked to summarise a text in one short sentence.", "{p}"),
        # a persona that introduces a labelled field is a template's instruction
        ("You are a strict code reviewer who points out every bug you can find.", "Code: {p}"),
    ],
)
def test_task_definitions_and_labelled_inputs_stay_prompts(head: str, rest: str) -> None:
    rows = [_chat(i, prompt=f"{head}\n\n{rest.format(p=PROMPTS[i])}") if i % 3 == 0 else _chat(i) for i in range(12)]
    assert "system_in_user" not in _names(rows)


def test_a_persona_on_every_row_is_the_datasets_design() -> None:
    rows = [_chat(i, prompt=f"{SYSTEM}\n\n{PROMPTS[i]}") for i in range(12)]
    assert "system_in_user" not in _names(rows)


ZH_PROMPTS = [f"如何排查只在持续集成上失败的第{i}号测试？" for i in range(12)]
ZH_ANSWERS = [f"先固定随机种子和时钟，再在负载下重跑第{i}号测试，确认问题来自时序。" for i in range(12)]


@pytest.mark.parametrize(
    "head, pasted",
    [
        ("你是一个严谨的助手，请准确回答并简要解释你的推理。", True),  # a persona, set off by a blank line
        ("给定一个句子，判断它的情感是正面还是负面。", False),  # a task definition: handed an input
        ("你是一个严谨的评审，请阅读下面的代码并指出问题。", False),  # a persona pointing at the input below
    ],
)
def test_cjk_personas_and_definitions(head: str, pasted: bool) -> None:
    rows = [
        _chat(i, prompt=f"{head}\n\n{ZH_PROMPTS[i]}" if i % 3 == 0 else ZH_PROMPTS[i], answer=ZH_ANSWERS[i])
        for i in range(12)
    ]
    assert ("system_in_user" in _names(rows)) is pasted


def test_bare_code_and_math_answers_are_in_no_language() -> None:
    """A code-instruction set in Chinese or Russian whose answers are bare code (no fence), or a math set whose
    answers are LaTeX, answers in the prompt's language: Latin letters in code and math are no script swap. An
    English prose answer with math in it is still one."""
    code = "def reverse(s):\n    return s[::-1]\n\nprint(reverse('hello'))"
    latex = "\\frac{\\sqrt{3}}{2}"
    rows = [
        *(_chat(i, prompt="写一个Python函数，反转字符串。", answer=code) for i in range(4)),
        *(
            _chat(i, prompt="Напиши функцию на Python, которая переворачивает строку.", answer=code)
            for i in range(4, 8)
        ),
        *(_chat(i, prompt="求 sin 60° 的值。", answer=latex) for i in range(8, 12)),
    ]
    assert "answer_language" not in _names(rows)
    english = "Since $x + 3 = 5$, subtracting three from both sides gives $x = 2$, so the answer is \\boxed{2}."
    swapped = [_chat(i, prompt="解方程 x+3=5，求x的值。", answer=english) for i in range(12)]
    assert _names(swapped)["answer_language"]["count"] == 12


def test_a_prompt_that_names_the_answers_language_in_its_own_script_is_no_swap() -> None:
    """'Answer in English', asked in Chinese, Japanese, Korean or Russian: an English answer is what was asked."""
    asks = ["请用英语回答：什么是递归？", "英語で答えてください：再帰とは何ですか？", "영어로 답해 주세요: 재귀란 무엇인가요?",
            "Ответь по-английски: что такое рекурсия?"]  # fmt: skip
    answer = "Recursion is when a function calls itself on a smaller part of the problem until it reaches a base case."
    rows = [_chat(i, prompt=asks[i % 4], answer=answer) for i in range(12)]
    assert "answer_language" not in _names(rows)
    plain = [_chat(i, prompt="什么是递归？请解释一下。", answer=answer) for i in range(12)]
    assert _names(plain)["answer_language"]["count"] == 12  # not asked for: still a swap


def test_an_answer_that_ends_on_an_address_is_not_cut() -> None:
    """ "See https://…/asyncio-task.html", "it lives in /etc/nginx/nginx.conf", "write to a@b.com": honest endings
    without a stop. An answer cut after a plain word still fails."""
    tails = [" See https://docs.python.org/3/library/asyncio-task.html", " It lives in /etc/nginx/nginx.conf"]
    tails += [" Write to support@example.com"]
    rows = [_chat(i, answer=ANSWERS[i] + tails[i % 3]) for i in range(12)]
    assert "answer_cut" not in _names(rows)
    cut = [_chat(i, answer=ANSWERS[i] + " See the docs at the address the maintainers") for i in range(12)]
    assert _names(cut)["answer_cut"]["count"] == 12


PERSONAS = [
    "You are Sherlock Holmes, the consulting detective of Baker Street.",
    "You are a patient Socratic math tutor who never gives the answer away.",
    "You are a grumpy medieval blacksmith who speaks in short sentences.",
    "You are an enthusiastic travel guide for the city of Kyoto.",
]


def test_a_persona_on_every_row_is_the_design_however_many_personas() -> None:
    """A role-play set opens every first turn with its character, one of four: the design, as one persona on every
    row is. One persona pasted on a third of the rows is still the trace of a flattened system turn."""
    every = [_chat(i, prompt=f"{PERSONAS[i % 4]}\n\n{PROMPTS[i]}") for i in range(12)]
    assert "system_in_user" not in _names(every)
    some = [_chat(i, prompt=f"{PERSONAS[i % 2]}\n\n{PROMPTS[i]}" if i % 3 == 0 else PROMPTS[i]) for i in range(12)]
    assert _names(some)["system_in_user"]["count"] == 4
