"""Config and split choice reads the card (issue 33, item 5): a config the card calls an evaluation set is never
chosen for training, even when it is the largest; the proposal says which it passed over and why."""

from __future__ import annotations

import pytest

from adapters.infer.infer import choose_config, choose_split
from adapters.read.card_configs import evaluation_names
from catalog.errors import DraftsetError

CARD = "The `chats` config holds the training conversations. The `arena` config is a held-out evaluation set."


def test_the_card_body_yaml_and_names_mark_evaluation_sets():
    assert set(evaluation_names(["chats", "arena"], CARD)) == {"arena"}
    yaml = {"configs": [{"config_name": "hard", "data_files": [{"split": "test", "path": "hard/*.jsonl"}]}]}
    assert set(evaluation_names(["easy", "hard"], "", yaml)) == {"hard"}
    assert set(evaluation_names(["sft", "bench_v2"], "")) == {"bench_v2"}
    # a common word is no mention, and a negation is no evidence
    assert evaluation_names(["all", "code"], "All evaluation results are in the paper.") == {}
    assert evaluation_names(["a", "b"], "The `b` config is not an evaluation set.") == {}


def test_the_largest_config_is_passed_over_when_the_card_calls_it_evaluation():
    rows = {"chats": 10, "arena": 90}
    assert choose_config(["chats", "arena"], rows)[0] == "arena"  # the old reading: largest wins
    config, why, guessed = choose_config(["chats", "arena"], rows, evaluation_names(["chats", "arena"], CARD))
    assert config == "chats" and guessed and "passed over as evaluation sets: 'arena'" in why
    # `all`, the union, would hold the evaluation set too
    assert choose_config(["all", "chats", "arena"], rows, {"arena": "card"})[0] == "chats"
    with pytest.raises(DraftsetError, match="every config"):
        choose_config(["arena", "bench"], rows, {"arena": "card", "bench": "name"})
    assert choose_split(["validation", "extra"], {"validation": 50, "extra": 5}, {"validation": "name"})[0] == "extra"


@pytest.mark.parametrize(
    "card",
    [
        "The `sft` config holds answers filtered by GPT-4 evaluation.",
        "The `sft` config contains responses scored with an LLM-as-judge evaluation rubric.",
        "The `sft` subset covers problems from the MATH benchmark training set.",
        "Answers in the `sft` config were checked for contamination against common benchmarks.",
        "The `sft` config was decontaminated against evaluation sets.",
    ],
)
def test_a_training_config_that_merely_mentions_evaluation_is_not_passed_over(card):
    """Evaluation named beside a config is no role: only "is a held-out set", "for evaluation only", "do not train"."""
    assert evaluation_names(["sft", "prefs"], card) == {}


@pytest.mark.parametrize(
    "card",
    [
        "The `arena` config is a benchmark; do not train on it.",
        "Use the `arena` subset for evaluation only.",
        "The `arena` config should never be used for training.",
        "The `arena` config is the test set of the paper.",
        "The `arena` config contains test data.",
    ],
)
def test_a_config_given_the_role_of_evaluation_data_is_marked(card):
    assert set(evaluation_names(["chats", "arena"], card)) == {"arena"}
