"""What detection decided about one dataset, field by field with a reason each, or the verdict that refuses it.

Its own module so that the column and role detectors (adapters/infer/columns.py, adapters/infer/roles.py) can fill it in
without importing adapters/infer/detect.py, which calls them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

REFUSALS = {
    "media": "media for a text-only target",
    "plain_text": "plain text, no turns",
    "message_per_row": "one message per row, no conversations",
    "no_dialogue": "text without a prompt and its answer",
    "no_text": "no text to train on",
    "unsupported_file": "unsupported file type",
    "loading_script": "a dataset loading script (code, never run)",
}


@dataclass
class Detected:
    fields: dict[str, Any] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    needs_review: list[str] = field(default_factory=list)
    role_counts: dict[str, int] = field(default_factory=dict)
    json_strings: list[str] = field(default_factory=list)
    refusal: str | None = None  # a key of REFUSALS: the dataset is refused by name
    n_rows: int = 0

    def decide(self, name: str, value: Any, reason: str, review: bool = False) -> None:
        self.fields[name] = value
        self.reasons[name] = reason
        if review and name not in self.needs_review:
            self.needs_review.append(name)

    def refuse(self, verdict: str, why: str) -> None:
        self.refusal = verdict
        self.fields["layout"] = None
        self.reasons["layout"] = f"refused: {REFUSALS[verdict]} ({why})"

    @property
    def layout(self) -> str | None:
        return self.fields.get("layout")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Detected:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
