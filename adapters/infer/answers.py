"""Answers that sit beside a turn list instead of inside it: the prompt is a list of turns and the answer (or the
pair of answers) is another column, one turn object or one string each.

LLaMA-Factory's ranking entries (`conversations` + `chosen`/`rejected` turn objects), TRL's conversational
preference data with string answers, and KTO sets whose `label` column judges the answer all have this shape. A
turn list that ends on a user turn with such columns next to it is only half a record: reading it alone drops
every answer, which the contract would pass in regenerate mode. Named columns are a prior; the values decide
(a turn object with the list's own role key, or text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.infer.column_names import CHOSEN, LABEL_NAMES, REJECTED
from adapters.infer.columns import _boolish
from adapters.infer.roles import infer_role_map
from adapters.map import structure as st

if TYPE_CHECKING:
    from adapters.detected import Detected


def _answer_like(rows: list[dict[str, Any]], key: str, role_key: str, content_key: str) -> str | None:
    """`turn` when every present value is one turn object with the list's keys, `text` when it is text."""
    values = [r.get(key) for r in rows if r.get(key) not in (None, "")]
    if not values or len(values) < 0.8 * len(rows):
        return None
    if all(isinstance(v, dict) and isinstance(st.get(v, role_key), str) for v in values):
        return "turn" if all(isinstance(st.get(v, content_key), (str, list)) for v in values) else None
    if all(isinstance(v, str) for v in values) and st.text_stats(values).texty >= 0.15:
        return "text"
    return None


def detect_answer_columns(d: Detected, rows: list[dict[str, Any]], cand: dict[str, Any]) -> None:
    """A chosen (and rejected) answer beside a prompt-only turn list: appended after it / kept as the pair."""
    if cand.get("kind") != "dicts" or "preference" in d.fields or "completion_path" in d.fields:
        return
    role_key, content_key, path = cand["role_key"], cand["content_key"], cand["path"]
    keys = [k for k in dict.fromkeys(k for r in rows for k in r) if k != path.split(".")[0]]
    kinds = {k: _answer_like(rows, k, role_key, content_key) for k in keys if k.lower() in CHOSEN + REJECTED}
    chosen = next((k for k in keys if k.lower() in CHOSEN and kinds.get(k)), None)
    rejected = next((k for k in keys if k.lower() in REJECTED and kinds.get(k)), None)
    if chosen is None:
        return
    d.decide(
        "completion_path",
        chosen,
        f"the turn list {path!r} holds the prompt; {chosen!r} holds the answer as "
        + ("one turn object" if kinds[chosen] == "turn" else "text")
        + ": appended after the prompt",
    )
    if rejected:
        d.decide(
            "preference",
            {"rejected": rejected},
            f"preference pairs: {chosen!r} is the chosen answer, {rejected!r} the rejected one (recorded, never trained)",
        )
    answers = [
        r[k] for r in rows for k in (chosen, rejected) if k and kinds[k] == "turn" and isinstance(r.get(k), dict)
    ]
    if answers:  # the answers' role labels (`gpt`) belong in the role map too
        lists = [[*lst, r[chosen]] if isinstance(r.get(chosen), dict) else lst for lst, r in zip(cand["lists"], rows)]
        known = dict(d.fields.get("role_map", {}))
        infer_role_map(d, cand["turns"] + answers, lists, role_key, content_key)
        d.fields["role_map"] = {**d.fields.get("role_map", {}), **known}


def detect_label(d: Detected, rows: list[dict[str, Any]]) -> None:
    """A KTO-style true/false column judging each answer, for any layout (undesirable answers are never trained)."""
    if "label_field" in d.fields:
        return
    columns = d.fields.get("columns") or {}
    if d.layout == "columns" and not columns.get("response") and "candidates" not in d.fields:
        return  # prompts alone: a label there classifies the request, there is no answer for it to judge
    keys = dict.fromkeys(k for r in rows for k in r)
    label = next((k for k in keys if k.lower() in LABEL_NAMES and _boolish([r.get(k) for r in rows])), None)
    if label:
        d.decide(
            "label_field",
            label,
            f"column {label!r} labels each answer true/false (KTO-style): undesirable answers are recorded, "
            "never trained",
        )
