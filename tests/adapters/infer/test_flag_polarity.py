"""A per-turn flag named like a training flag can mean the opposite: a `mask` of the turns left out of the loss.
Its mirror image (true on the system and user turns, false on nearly only the answers) is read inverted; a
training flag (true on the answers it trains) keeps its reading. Before, the mirror mapped silently wrong: the
first answer trained and the record cut there."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.map.apply import RowMapper
from adapters.spec import AdapterSpec, SourceSpec

Q = "How do I find the test that fails only on the CI runners, case {i}?"
A = "Rerun the suite with a fixed seed and the clock frozen, then bisect the order of the tests for case {i}."


def _rows(flag: Any) -> list[dict[str, Any]]:
    """Twelve two-exchange chats; `flag(role, k)` gives each turn's `mask` (k: its index in the chat)."""
    roles = ["system", "user", "assistant", "user", "assistant"]
    texts = ["You are a careful assistant.", Q, A, Q, A]
    return [
        {
            "conversation": [
                {"role": r, "content": t.format(i=i), "mask": flag(r, k)} for k, (r, t) in enumerate(zip(roles, texts))
            ]
        }
        for i in range(12)
    ]


def _spec(rows: list[dict[str, Any]]) -> AdapterSpec:
    source = SourceSpec(repo_id="lab/x", revision="0" * 40, config="default", split="train", data_files=["d.jsonl"])
    spec = build_proposal(detect(rows), list(enumerate(rows)), source, "").spec
    return spec.model_copy(update={"mode": "native"})


def _trained(spec: AdapterSpec, row: dict[str, Any]) -> list[tuple[str, bool | None]]:
    (rec,) = RowMapper(spec).apply(0, row)
    return [(m.role, m.train) for m in rec.messages if m.role == "assistant"]


def test_a_mask_over_the_prompt_is_read_inverted() -> None:
    rows = _rows(lambda role, k: role != "assistant" or k < 4)  # the first answer is context only
    spec = _spec(rows)
    assert spec.train_flag_key == "mask" and spec.train_flag_inverted is True
    assert "read inverted" in spec.reasons["train_flag_inverted"] and "train_flag_inverted" in spec.needs_review
    assert _trained(spec, rows[0]) == [("assistant", False), ("assistant", True)]


@pytest.mark.parametrize(
    "flag",
    [
        lambda role, k: role == "assistant",  # nebius SWE-agent: true on the answers
        lambda role, k: role == "assistant" and k == 4,  # axolotl: only the last answer trained
        lambda role, k: role == "assistant" or k == 0,  # the system prompt flagged too, the answers still trained
    ],
)
def test_a_training_flag_keeps_its_reading(flag: Any) -> None:
    rows = _rows(flag)
    spec = _spec(rows)
    assert spec.train_flag_key == "mask" and spec.train_flag_inverted is None
    assert _trained(spec, rows[0])[-1] == ("assistant", True)


def test_inverted_needs_the_flag_it_inverts_and_is_hashed_only_when_set() -> None:
    spec = _spec(_rows(lambda role, k: role == "assistant"))
    assert "train_flag_inverted" not in spec.hashed_payload()
    with pytest.raises(ValueError, match="train_flag_inverted"):
        AdapterSpec.model_validate({**spec.model_dump(), "train_flag_key": None, "train_flag_inverted": True})


def _answers_only(key: str) -> list[dict[str, Any]]:
    """The flag on the answers only, false on every one of them."""
    return [
        {
            "conversation": [
                {"role": "user", "content": Q.format(i=i)},
                {"role": "assistant", "content": A.format(i=i), key: False},
            ]
        }
        for i in range(12)
    ]


def test_a_mask_that_trains_no_answer_anywhere_is_reread_inverted() -> None:
    """The second reading (adapters/infer/rereading.py): `mask: false` on every answer trains nothing as read; a mask's
    name does not say its polarity, so the other reading is tried, and it trains every answer."""
    rows = _answers_only("mask")
    spec = _spec(rows)
    assert spec.train_flag_inverted is True
    assert "trains no answer on nearly every row" in spec.reasons["reading"]
    assert "reading" in spec.needs_review
    assert _trained(spec, rows[0]) == [("assistant", True)]


def test_a_flag_that_says_what_it_means_stays_rejected_by_name() -> None:
    d = detect(_answers_only("train"))
    assert d.fields.get("train_flag_key") == "train" and not d.fields.get("train_flag_inverted")
    assert "says what it means" in d.reasons["reading"]
