"""Canonical `Conversation` ⇄ shard row (the columns of data/normalized and data/mix)."""

from __future__ import annotations

from typing import Any

from adapters.records import Conversation
from catalog.errors import DraftsetError
from pipeline.dedup.keys import prompt_hash


def to_row(conv: Conversation) -> dict[str, Any]:
    src = conv.source
    return {
        "id": conv.id,
        "repo_id": src.repo_id,
        "revision": src.revision,
        "config": src.config,
        "split": src.split,
        "row_index": src.row_index,
        "category": conv.category,
        "mode": conv.mode,
        "prompt_hash": prompt_hash(conv.prompt_text()),
        "n_turns": len(conv.messages),
        "prompt_chars": len(conv.context_text()),
        "conversation": conv.model_dump_json(),  # pydantic's Rust serializer: UTF-8, no ASCII escapes
    }


def from_row(row: dict[str, Any]) -> Conversation:
    """Parse a shard row back; a corrupt row names its id instead of raising a traceback."""
    try:
        return Conversation.model_validate_json(row["conversation"])
    except (ValueError, KeyError, TypeError) as exc:
        raise DraftsetError(
            f"shard row {row.get('id')!r} of {row.get('repo_id')!r} holds an invalid "
            f"conversation: {str(exc).splitlines()[0]}",
            hint="re-run `draftset ingest --repo <repo> --fresh` to rebuild its shards",
        ) from exc
