"""Helpers for adapter tests (unique module name: tests/ has no packages, so names must not clash)."""

from __future__ import annotations

from typing import Any

from adapters.source import RawRow
from adapters.spec import AdapterSpec

REVISION = "a" * 40


def make_spec(**fields: Any) -> AdapterSpec:
    data: dict[str, Any] = {
        "source": {
            "repo_id": "lab/data",
            "revision": REVISION,
            "config": "default",
            "split": "train",
            "data_files": ["data/train.jsonl"],
        },
        "layout": "messages",
        "messages_path": "messages",
        "role_key": "role",
        "content_key": "content",
        "role_map": {"user": "user", "assistant": "assistant", "system": "system"},
    }
    data.update(fields)
    return AdapterSpec.from_data(data)


def raw(rows: list[Any]) -> list[RawRow]:
    return [RawRow(i, r) for i, r in enumerate(rows)]
