"""Helpers for adapter tests (unique module name: tests/ has no packages, so names must not clash).

Tests in other folders import it as `tests.kits.adapters` (the repo root is on sys.path)."""

from __future__ import annotations

from typing import Any

from adapters.read.source import RawRow
from adapters.spec import AdapterSpec
from catalog import Catalog

REVISION = "a" * 40


def make_spec(
    *,
    repo_id: str = "lab/data",
    revision: str = REVISION,
    data_files: tuple[str, ...] = ("data/train.jsonl",),
    **fields: Any,
) -> AdapterSpec:
    """A `messages` layout spec (role/content turns under `messages`) for one split; `fields` override."""
    data: dict[str, Any] = {
        "source": {
            "repo_id": repo_id,
            "revision": revision,
            "config": "default",
            "split": "train",
            "data_files": list(data_files),
        },
        "layout": "messages",
        "messages_path": "messages",
        "role_key": "role",
        "content_key": "content",
        "role_map": {"user": "user", "assistant": "assistant", "system": "system"},
    }
    data.update(fields)
    return AdapterSpec.from_data(data)


def approve_on_hub(cat: Catalog, url: str, repo_id: str, note: str, **fields: Any) -> AdapterSpec:
    """Store a user/assistant `messages` spec pinned to the repo's current revision on the Hub at `url`,
    and approve it with --force (the test data fails its contract on purpose)."""
    from huggingface_hub import HfApi

    from adapters.review import review, store

    revision = HfApi(endpoint=url).dataset_info(repo_id).sha
    assert revision is not None
    spec = make_spec(
        repo_id=repo_id,
        revision=revision,
        role_map={"user": "user", "assistant": "assistant"},
        category="general chat",
        **fields,
    )
    store.save_spec(cat, spec)
    review.approve(cat, repo_id, "tester", note=note, force=True)
    return spec


def raw(rows: list[Any]) -> list[RawRow]:
    return [RawRow(i, r) for i, r in enumerate(rows)]
