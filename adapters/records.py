"""Canonical conversation records: the one shape every adapter produces and every stage reads."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.record_text import ConversationText

Role = Literal["system", "user", "assistant", "tool"]
Mode = Literal["native", "regenerate"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=False)


class Source(Strict):
    """Where a record came from, precise enough to re-read the raw row."""

    repo_id: str
    revision: str
    config: str
    split: str
    row_index: int


class Message(Strict):
    role: Role
    content: str
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    # None: trained according to the stage's policy (assistant turns of native data);
    # False/True: an explicit per-turn flag from the source (e.g. a `mask` key).
    train: bool | None = None


class Conversation(ConversationText, Strict):  # prompt_text/context_text/response_text/length: record_text.py
    id: str
    source: Source
    category: str
    mode: Mode
    messages: list[Message] = Field(min_length=1)

    def content_hash(self) -> str:
        """Hash of the messages alone: equal conversations hash equal whatever their source."""
        payload = json.dumps([m.model_dump() for m in self.messages], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    def to_export(self) -> dict[str, Any]:
        """The common `{"id", "conversations": [{"role", "content", ...}]}` JSONL shape."""
        turns = []
        for m in self.messages:
            turn: dict[str, Any] = {"role": m.role, "content": m.content}
            if m.reasoning is not None:
                turn["reasoning_content"] = m.reasoning
            if m.tool_calls is not None:
                turn["tool_calls"] = m.tool_calls
            turns.append(turn)
        return {"id": self.id, "conversations": turns}


def record_id(repo_id: str, config: str, split: str, row_index: int, turn: int | None = None) -> str:
    """Stable id from provenance, so re-ingesting the same row gives the same id (resume by id)."""
    key = f"{repo_id}|{config}|{split}|{row_index}" + ("" if turn is None else f"|{turn}")
    return hashlib.sha1(key.encode()).hexdigest()[:20]
