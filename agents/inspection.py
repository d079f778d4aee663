"""What the sampled rows and features of a dataset say, for find's scoring: the layout (from the one
detector in adapters/, the same one adapter proposal uses), its trial yield and sizes, non-text content,
target-native model columns. Pure functions over viewer output.

Rows are untrusted data: JSON strings are decoded with json.loads only, nothing is evaluated.
"""

from __future__ import annotations

from typing import Any

from adapters.infer.detect import Detected, detect
from adapters.infer.trial import summarise, trial_records
from adapters.records import Conversation
from agents import content

NON_TEXT_TYPES = ("Image", "Audio", "Video")
TURN_LAYOUTS = ("messages", "trajectory", "utterances", "transcript", "turn_columns")


def detect_structure(features: dict[str, Any], rows: list[dict[str, Any]], card_text: str = "") -> dict[str, Any]:
    """The detected layout in find's terms: `messages` (any turn layout), `columns` or `none`, with the field
    it reads and the full detection (stored in the catalog's `schemas` table for proposal to start from)."""
    d = detect(rows, features=features, card_text=card_text)
    if d.layout in TURN_LAYOUTS:
        field = (
            d.fields.get("messages_path")
            or (d.fields.get("transcript") or {}).get("field")
            or next((t["field"] for t in d.fields.get("turn_columns") or []), None)
        )
        return {"layout": "messages", "field": field, "detected": d}
    if d.layout == "columns":
        return {
            "layout": "columns",
            "field": d.fields["columns"]["prompt"][0],
            "response": d.fields["columns"]["response"],
            "detected": d,
        }
    return {"layout": "none", "field": None, "detected": d, "refusal": d.refusal, "why": d.reasons.get("layout", "")}


def sample_records(structure: dict[str, Any], rows: list[dict[str, Any]]) -> list[Conversation | None]:
    """Each sampled row as the detection maps it (None: no record): what trial yield and content read."""
    d: Detected | None = structure.get("detected")
    return trial_records(d, rows) if d is not None else [None] * len(rows)


def sample_stats(structure: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, float]:
    """Yield (usable rows / sampled rows) and mean prompt/response characters, by applying the detection."""
    return summarise(sample_records(structure, rows))


def non_text(
    tags: list[str], features: dict[str, Any], rows: list[dict[str, Any]], detected: Detected | None = None
) -> str | None:
    """Why the dataset is not text training data (image/audio/tabular), or None."""
    for tag in tags:
        if tag.startswith("task_categories:") and any(
            k in tag for k in ("image", "audio", "speech", "tabular", "video", "object-detection")
        ):
            return tag.split(":", 1)[1]
    for name, ftype in features.items():
        if isinstance(ftype, dict) and ftype.get("_type") in NON_TEXT_TYPES:
            return f"{ftype['_type'].lower()} column {name!r}"
    if detected is not None and detected.refusal in ("media", "no_text"):
        return detected.reasons.get("layout", detected.refusal)
    if detected is not None and detected.fields.get("media"):
        return (
            "media rows ("
            + ", ".join(detected.fields["media"]["fields"] or detected.fields["media"]["placeholders"])
            + ") for a text-only target"
        )
    if rows and all(isinstance(v, (int, float, bool)) or v is None for v in rows[0].values()):
        return "numeric columns only"
    return None


def sampled(facts: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Features and rows of the config/split whose first rows were read (empty when none was)."""
    first = next((c for c in facts["configs"] if c["rows"]), None)
    return (first["features"], first["rows"]) if first else ({}, [])


def content_of(facts: dict[str, Any]) -> dict[str, Any]:
    """The sampled rows' content signals (agents/content.py), computed once per facts: HubTools computes them
    when a revision is first inspected in a run, so the agents scoring the same repo share them. Never written
    to the disk cache, so a newer probe never reads an older one's answer."""
    if "content" not in facts:
        features, rows = sampled(facts)
        structure = detect_structure(features, rows, facts.get("card_text", ""))
        facts["content"] = content.signals(rows, structure["detected"], sample_records(structure, rows))
    return facts["content"]


def content_counts(facts: dict[str, Any]) -> dict[str, str]:
    """The content kinds the sampled rows show, as "k/n" (the llm policy's inspect tool shows it)."""
    found = content_of(facts)
    return {k: f"{v}/{found['rows']}" for k, v in found["counts"].items() if v}
