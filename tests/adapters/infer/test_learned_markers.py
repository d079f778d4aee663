"""Rendered chats in templates adapters/map/rendered.py does not list: markers learned from the rows (issue 33, 5a).

Each template here was refused as plain text before (no grammar knew it); prose with labels, HTML and log tags
must still not read as a chat."""

from __future__ import annotations

import random

import pytest

from adapters.infer.detect import detect
from adapters.infer.learned_markers import learn_grammar, marker_role
from adapters.map.rendered import best_grammar, turns_of

PAIRS = [
    ("How do I squash commits before a merge?", "Run git rebase -i and mark the commits as squash."),
    ("Why is my Docker image so large?", "Each RUN adds a layer; chain the commands and clean the cache."),
    ("What does a flaky test usually mean?", "Shared state or timing: run it alone and under load."),
    ("Can you explain rate limiting?", "A token bucket refills at a fixed rate and each request spends one."),
]

TEMPLATES = {
    "openchat": lambda ps: "".join(
        f"GPT4 Correct User: {u}<|end_of_turn|>GPT4 Correct Assistant: {a}<|end_of_turn|>" for u, a in ps
    ),
    "command-r": lambda ps: (
        "<BOS_TOKEN>"
        + "".join(
            f"<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{u}<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>{a}<|END_OF_TURN_TOKEN|>"
            for u, a in ps
        )
    ),
    "granite": lambda ps: "\n".join(
        f"<|start_of_role|>user<|end_of_role|>{u}<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>{a}<|end_of_text|>"
        for u, a in ps
    ),
    "kimi": lambda ps: "".join(
        f"<|im_user|>user<|im_middle|>{u}<|im_end|><|im_assistant|>assistant<|im_middle|>{a}<|im_end|>" for u, a in ps
    ),
    "oig": lambda ps: "".join(f"<human>: {u}\n<bot>: {a}\n" for u, a in ps),
    "house": lambda ps: "".join(f"[PROMPT] {u}\n[REPLY] {a}\n\n" for u, a in ps),
}


def _rows(render, n: int = 10) -> tuple[list[str], list[list[tuple[str, str]]]]:
    rng = random.Random(7)
    texts, truths = [], []
    for _ in range(n):
        ps = rng.sample(PAIRS, rng.randint(1, 3))
        texts.append(render(ps))
        truths.append([t for u, a in ps for t in (("user", u), ("assistant", a))])
    return texts, truths


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_unlisted_template_is_learned_and_split_right(name: str) -> None:
    texts, truths = _rows(TEMPLATES[name])
    assert best_grammar(texts) is None or best_grammar(texts)[2] < 0.8 * len(texts)  # no listed grammar reads it
    learned = learn_grammar(texts)
    assert learned is not None
    grammar, markers, ok = learned
    assert ok == len(texts)
    for text, truth in zip(texts, truths, strict=True):
        assert turns_of(text, markers, anchored=False, ends=grammar.ends, preamble=grammar.preamble) == truth


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_detect_reads_unlisted_template_as_transcript(name: str) -> None:
    texts, _ = _rows(TEMPLATES[name])
    d = detect([{"id": i, "text": t} for i, t in enumerate(texts)])
    assert d.layout == "transcript"
    assert d.fields["transcript"]["anchored"] is False
    assert "learned from the rows" in d.reasons["layout"]


def test_system_text_before_the_first_marker_is_the_system_turn() -> None:
    texts = [
        f"<｜begin▁of▁sentence｜>Be brief.<｜User｜>{u}<｜Assistant｜>{a}<｜end▁of▁sentence｜>" for u, a in PAIRS * 2
    ]
    grammar, markers, _ = learn_grammar(texts)
    assert grammar.preamble == "system"
    turns = turns_of(texts[0], markers, anchored=False, ends=grammar.ends, preamble=grammar.preamble)
    assert turns == [("system", "Be brief."), ("user", PAIRS[0][0]), ("assistant", PAIRS[0][1])]


def test_roles_come_from_the_last_role_word() -> None:
    assert marker_role("GPT4 Correct User:") == "user"
    assert marker_role("GPT4 Correct Assistant:") == "assistant"
    assert marker_role("<|CHATBOT_TOKEN|>") == "assistant"
    assert marker_role("<|START_OF_TURN_TOKEN|>") is None


def test_prose_logs_and_html_are_not_chats() -> None:
    rng = random.Random(3)
    prose = [
        "\n".join(
            rng.sample(
                [
                    "Note: restart after.",
                    "User: admin keeps settings.",
                    "<b>Breaking</b> flag renamed.",
                    "The cache moved.",
                ],
                4,
            )
        )
        for _ in range(10)
    ]
    logs = [
        "\n".join(rng.choice(["[INFO] start", "[WARN] slow", "[ERROR] failed", "[INFO] done"]) for _ in range(6))
        for _ in range(10)
    ]
    html = [f"<div><p>Step {i}</p><p>Then run make.</p></div>" for i in range(10)]
    for texts in (prose, logs, html):
        assert learn_grammar(texts) is None


def test_a_role_word_heading_lines_inside_turns_is_not_taken_for_a_marker() -> None:
    texts = [
        f"<human>: {u}\n<bot>: Here is the fix.\nAnswer: {a}\n"
        + ("<human>: thanks\n<bot>: Glad it helped.\n" if i % 2 else "")
        for i, (u, a) in enumerate(PAIRS * 3)
    ]
    grammar, markers, ok = learn_grammar(texts)
    assert markers == {"<bot>:": "assistant", "<human>:": "user"} and ok == len(texts)
    turns = turns_of(texts[0], markers, anchored=False, ends=grammar.ends, preamble=grammar.preamble)
    assert turns[1] == ("assistant", f"Here is the fix.\nAnswer: {PAIRS[0][1]}")


def test_between_label_sets_the_more_specific_markers_win() -> None:
    texts = [
        f"GPT4 Correct User: {u}<|end_of_turn|>GPT4 Correct Assistant: Sure.\nAnswer: {a}<|end_of_turn|>"
        for u, a in PAIRS * 3
    ]
    _, markers, _ = learn_grammar(texts)
    assert markers == {"GPT4 Correct Assistant:": "assistant", "GPT4 Correct User:": "user"}
