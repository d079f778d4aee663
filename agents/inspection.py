"""What the sampled rows and features of a dataset say: conversation or prompt columns, yield,
token sizes, non-text content, target-native model columns. Pure functions over viewer output.

Rows are untrusted data: JSON strings are decoded with json.loads only, nothing is evaluated.
"""

from __future__ import annotations

import json
from typing import Any

from catalog import limits

ROLE_KEYS = ("role", "from")
CONTENT_KEYS = ("content", "value", "text")
PROMPT_COLUMNS = ("prompt", "instruction", "question", "problem", "query", "input")
RESPONSE_COLUMNS = ("response", "output", "answer", "solution", "completion", "chosen", "answers")
MODEL_COLUMNS = ("model", "model_name", "generator", "source_model")
NON_TEXT_TYPES = ("Image", "Audio", "Video")
USER_ROLES = {"user", "human", "customer", "prompter"}


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return limits.loads_limited(value)
        except limits.LimitExceeded:
            return value
    return value


def _turns(value: Any) -> list[dict[str, Any]] | None:
    """A list of role/content dicts (possibly JSON-encoded), else None."""
    value = _decode(value)
    if not isinstance(value, list) or not value or not all(isinstance(t, dict) for t in value):
        return None
    if not any(k in value[0] for k in ROLE_KEYS):
        return None
    return value


def _text(turn: dict[str, Any]) -> str:
    for key in CONTENT_KEYS:
        if isinstance(turn.get(key), str):
            return turn[key]
    return ""


def _role(turn: dict[str, Any]) -> str:
    return str(next((turn[k] for k in ROLE_KEYS if k in turn), ""))


def detect_structure(features: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Find the conversation column, else a prompt (+response) column pair."""
    names = list(features) or (list(rows[0]) if rows else [])
    for name in names:
        if any(_turns(r.get(name)) for r in rows):
            return {"layout": "messages", "field": name}
    lower = {n.lower(): n for n in names}
    prompt = next((lower[c] for c in PROMPT_COLUMNS if c in lower), None)
    response = next((lower[c] for c in RESPONSE_COLUMNS if c in lower), None)
    if prompt:
        return {"layout": "columns", "field": prompt, "response": response}
    return {"layout": "none", "field": None}


def sample_stats(structure: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, float]:
    """Yield (usable rows / sampled rows) and mean prompt/response characters of the usable ones."""
    usable, prompt_chars, response_chars = 0, 0, 0
    for row in rows:
        if structure["layout"] == "messages":
            turns = _turns(row.get(structure["field"])) or []
            users = [_text(t) for t in turns if _role(t) in USER_ROLES and _text(t).strip()]
            if not users:
                continue
            prompt_chars += sum(len(_text(t)) for t in turns if _role(t) not in ("gpt", "assistant", "ai"))
            response_chars += sum(len(_text(t)) for t in turns if _role(t) in ("gpt", "assistant", "ai"))
        elif structure["layout"] == "columns":
            prompt = row.get(structure["field"])
            if not isinstance(prompt, str) or not prompt.strip():
                continue
            prompt_chars += len(prompt)
            answer = row.get(structure.get("response") or "")
            response_chars += len(answer if isinstance(answer, str) else json.dumps(answer or ""))
        else:
            continue
        usable += 1
    n = max(len(rows), 1)
    return {"yield": usable / n, "prompt_chars": prompt_chars / max(usable, 1),
            "response_chars": response_chars / max(usable, 1)}


def non_text(tags: list[str], features: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """Why the dataset is not text training data (image/audio/tabular), or None."""
    for tag in tags:
        if tag.startswith("task_categories:") and any(
                k in tag for k in ("image", "audio", "speech", "tabular", "video", "object-detection")):
            return tag.split(":", 1)[1]
    for name, ftype in features.items():
        if isinstance(ftype, dict) and ftype.get("_type") in NON_TEXT_TYPES:
            return f"{ftype['_type'].lower()} column {name!r}"
    if rows and all(isinstance(v, (int, float, bool)) or v is None for v in rows[0].values()):
        return "numeric columns only"
    return None


def model_column_values(rows: list[dict[str, Any]]) -> list[str]:
    """Values of a model/generator column in the sampled rows (target-native evidence)."""
    return sorted({str(r[c]) for r in rows for c in MODEL_COLUMNS if isinstance(r.get(c), str)})
