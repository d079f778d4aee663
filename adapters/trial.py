"""A trial application of a detection to its own sample: the yield and sizes find ranks by.

find and proposal share the detector; this turns a detection into a throw-away spec (placeholder source)
and applies it, so the yield find reports is what the adapter would really produce, not a second guess.
"""

from __future__ import annotations

from typing import Any

from adapters.apply import RowError, RowMapper
from adapters.detected import Detected
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


def trial(d: Detected, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Yield (records per sampled row) and mean prompt/response characters of the records.

    Applied as native data first (answers kept, so their size is measured); a row with no answer to keep
    still counts when it gives a prompt to regenerate from."""
    empty = {"yield": 0.0, "prompt_chars": 0.0, "response_chars": 0.0}
    if d.layout is None or not rows:
        return empty
    try:
        native, regen = (
            RowMapper(AdapterSpec.from_data(spec_data(d, PLACEHOLDER_SOURCE, mode, "trial"), where="trial"))
            for mode in ("native", "regenerate")
        )
    except DraftsetError:
        return empty
    made = prompt = response = 0
    for i, row in enumerate(rows):
        try:
            [rec] = native.apply(i, row)
        except (RowError, ValueError):
            try:
                [rec] = regen.apply(i, row)
            except (RowError, ValueError):
                continue
        made += 1
        prompt += len(rec.context_text())  # the record's own meanings (adapters/record_text.py)
        response += len(rec.response_text())
    return {"yield": made / len(rows), "prompt_chars": prompt / max(made, 1), "response_chars": response / max(made, 1)}
