"""A trial application of a detection to its own sample: the yield and sizes find ranks by.

find and proposal share the detector; this turns a detection into a throw-away spec (placeholder source)
and applies it, so the yield find reports is what the adapter would really produce, not a second guess.
"""

from __future__ import annotations

from typing import Any

from adapters.detected import Detected
from adapters.map.apply import RowError, RowMapper
from adapters.records import Conversation
from adapters.spec import AdapterSpec
from catalog.errors import DraftsetError

PLACEHOLDER_SOURCE = {
    "repo_id": "trial/trial",
    "revision": "trial",
    "config": "default",
    "split": "train",
    "data_files": ["trial"],
}


def spec_data(d: Detected, source: dict[str, Any], mode: str, category: str) -> dict[str, Any]:
    """Spec fields from a detection (reasoning.* fields nest under `reasoning`)."""
    data: dict[str, Any] = {"source": source, "mode": mode, "category": category}
    reasoning: dict[str, Any] = {}
    for name, value in d.fields.items():
        if name.startswith("reasoning."):
            reasoning[name.split(".", 1)[1]] = value
        else:
            data[name] = value
    if reasoning:
        data["reasoning"] = reasoning
    return data


def trial_records(d: Detected, rows: list[dict[str, Any]]) -> list[Conversation | None]:
    """Each sampled row as the adapter would map it (None: it gives no record). Applied as native data first
    (answers kept, so their size is measured); a row with no answer to keep still counts when it gives a
    prompt to regenerate from."""
    if d.layout is None or not rows:
        return [None] * len(rows)
    try:
        native, regen = (
            RowMapper(AdapterSpec.from_data(spec_data(d, PLACEHOLDER_SOURCE, mode, "trial"), where="trial"))
            for mode in ("native", "regenerate")
        )
    except DraftsetError:
        return [None] * len(rows)
    out: list[Conversation | None] = []
    for i, row in enumerate(rows):
        try:
            [rec] = native.apply(i, row)
        except (RowError, ValueError):
            try:
                [rec] = regen.apply(i, row)
            except (RowError, ValueError):
                rec = None
        out.append(rec)
    return out


def trial(d: Detected, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Yield (records per sampled row) and mean prompt/response characters of the records."""
    return summarise(trial_records(d, rows))


def summarise(records: list[Conversation | None]) -> dict[str, float]:
    made = [r for r in records if r is not None]
    if not made:
        return {"yield": 0.0, "prompt_chars": 0.0, "response_chars": 0.0}
    prompt = sum(len(r.context_text()) for r in made)  # the record's own meanings (adapters/record_text.py)
    response = sum(len(r.response_text()) for r in made)
    return {
        "yield": len(made) / len(records),
        "prompt_chars": prompt / len(made),
        "response_chars": response / len(made),
    }
