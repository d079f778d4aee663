"""Canonical `Conversation` ⇄ shard row (the columns of data/normalized, data/mix and regenerate's results).

Every stage that reads shards parses rows here: `read_row` for a stage that quarantines a bad row and goes on
(`BadRow` names the field), `from_row` for a reader that must stop (a `DraftsetError` naming the row)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from adapters.records import Conversation
from catalog.errors import DraftsetError
from pipeline.rows.keys import prompt_hash


class BadRow(ValueError):
    """A row whose conversation cannot be used; `field` names where (e.g. `conversation.messages.2.role`)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


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


def read_row(row: dict[str, Any]) -> Conversation:
    """The row's conversation, validated, and agreeing with the row's own `mode` column when it has one."""
    text = row.get("conversation")
    if not isinstance(text, str) or not text:
        raise BadRow("conversation", "invalid conversation: the row holds no conversation JSON")
    try:
        conversation = Conversation.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = "conversation." + ".".join(str(p) for p in first["loc"]) if first["loc"] else "conversation"
        raise BadRow(field, f"invalid {field}: {first['msg']}") from exc
    if "mode" in row and row["mode"] != conversation.mode:
        raise BadRow("mode", f"mode column {row['mode']!r} != conversation.mode {conversation.mode!r}")
    return conversation


def from_row(row: dict[str, Any]) -> Conversation:
    """Parse a shard row back; a corrupt row names its id instead of raising a traceback."""
    try:
        return read_row(row)
    except BadRow as exc:
        raise DraftsetError(
            f"shard row {row.get('id')!r} of {row.get('repo_id')!r} holds an invalid "
            f"conversation: {str(exc).splitlines()[0]}",
            hint="re-run `draftset ingest --repo <repo> --fresh` to rebuild its shards",
        ) from exc
