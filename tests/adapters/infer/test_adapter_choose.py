"""Config and split choice: recorded why, flagged for review when guessed."""

from adapters.infer.detect import names_target
from adapters.infer.infer import choose_config, choose_split


def test_config_choice():
    assert choose_config(["default", "metadata"], {})[0] == "default"
    assert choose_config(["all", "code", "math"], {})[0] == "all"
    config, why, guessed = choose_config(["7M", "0625"], {"7M": 80, "0625": 20})
    assert (config, guessed) == ("7M", True) and "80 rows" in why
    assert choose_config(["metadata", "raw"], {"raw": 5, "metadata": 9})[0] == "metadata"  # nothing else to take


def test_split_choice():
    assert choose_split(["test", "train"], {}) == ("train", "the `train` split", False)
    assert choose_split(["test_sft", "train_gen", "train_sft"], {})[0] == "train_sft"
    assert choose_split(["train.raw"], {})[0] == "train.raw"
    split, why, guessed = choose_split(["tool", "xml"], {"tool": 30, "xml": 30})
    assert (split, guessed) == ("tool", True) and "no train-like split" in why


def test_target_family_from_model_column_or_card():
    patterns = (r"\bkimi\b", r"moonshot")
    assert "column 'model'" in names_target("", [{"model": "moonshotai/Kimi-K2.5"}] * 3, patterns)
    assert "card" in names_target("Answers generated with Kimi K2 by us.", [{}], patterns)
    assert names_target("Distilled from a Llama model.", [{"model": "llama"}], patterns) is None
