"""Canonical conversation records: the one shape every adapter produces and every stage reads.

Record v2 is agentic-native, in the OpenAI chat wire shapes so regeneration and chat templates take
it as is: `tools` (function declarations with a JSON-schema `parameters`) on the conversation;
assistant `tool_calls` as `{id, type: "function", function: {name, arguments: JSON string}}`; tool
turns with `tool_call_id` and `name`; media as `parts` (`{type, ref}`) so nothing is dropped unseen;
`reasoning` and a per-turn `train` flag. Preference pairs and KTO-style labels are kept on the record
(`preference`, `label`) instead of being ignored.

Versioning: every record carries `record_version`. A stored v1 record (no version field) is upgraded
on read: its tool calls are normalised to the v2 shape, every other v1 field already means the same
thing. A version this code does not know is refused by name (`UnknownRecordVersion`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters.record_text import ConversationText

RECORD_VERSION = 2
Role = Literal["system", "user", "assistant", "tool"]
Mode = Literal["native", "regenerate"]
PartType = Literal["image", "audio", "video", "file"]


class UnknownRecordVersion(ValueError):
    """A stored record written by a newer (or foreign) schema: refused by name, never guessed at."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=False)


class Source(Strict):
    """Where a record came from, precise enough to re-read the raw row."""

    repo_id: str
    revision: str
    config: str
    split: str
    row_index: int


class FunctionCall(Strict):
    name: str = Field(min_length=1)
    arguments: str = Field(description="a JSON object serialised as a string (the OpenAI wire format)")


class ToolCall(Strict):
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class FunctionDecl(Strict):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}, description="JSON schema of the arguments object"
    )
    strict: bool | None = None


class Tool(Strict):
    """One tool declaration exactly as the OpenAI API's `tools=` takes it."""

    type: Literal["function"] = "function"
    function: FunctionDecl


class Part(Strict):
    """A media attachment. `ref` says where the bytes are (URL, repo path, or `row:<field>[i]`)."""

    type: PartType
    ref: str = Field(min_length=1)


class Message(Strict):
    role: Role
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = Field(None, description="tool turns: the id of the call this answers")
    name: str | None = Field(None, description="tool turns: the function that produced this result")
    parts: list[Part] | None = None
    # None: trained according to the stage's policy (assistant turns of native data);
    # False/True: an explicit per-turn flag from the source (e.g. a `mask` key, a KTO label).
    train: bool | None = None


class Preference(Strict):
    """The other side of a preference pair: the rejected continuation after the shared prompt.

    Kept so the pair is never lost; it is never trained (native mode trains `messages`, the chosen side)."""

    rejected: list[Message] = Field(min_length=1)
    chosen_score: float | None = None
    rejected_score: float | None = None


class Conversation(ConversationText, Strict):  # prompt_text/context_text/response_text/length: record_text.py
    record_version: Literal[2] = 2  # RECORD_VERSION
    id: str
    source: Source
    category: str
    mode: Mode
    tools: list[Tool] | None = None
    messages: list[Message] = Field(min_length=1)
    preference: Preference | None = None
    # KTO-style label of the assistant answer: False = undesirable (its turns carry train=False).
    label: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        version = data.get("record_version", 1)
        if version == RECORD_VERSION:
            return data
        if version != 1:
            raise UnknownRecordVersion(
                f"record_version {version!r} is not readable by this draftset (it reads v1 and v{RECORD_VERSION})"
            )
        return upgrade_v1(data)

    def model_dump_json(self, **kwargs: Any) -> str:
        # Stored compactly: an absent optional field reads back as None, so nulls are not written
        # (most turns have no calls, parts or ids; writing them would double small records).
        kwargs.setdefault("exclude_none", True)
        return super().model_dump_json(**kwargs)

    def content_hash(self) -> str:
        """Hash of what is said (tools and messages) alone: equal conversations hash equal whatever their source."""
        payload = json.dumps(
            [
                [t.model_dump(exclude_none=True) for t in self.tools or []],
                [m.model_dump(exclude_none=True) for m in self.messages],
            ],
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def to_export(self) -> dict[str, Any]:
        """The common `{"id", "tools", "conversations": [{"role", "content", ...}]}` shape (chat-template keys)."""
        turns = []
        for m in self.messages:
            turn: dict[str, Any] = {"role": m.role, "content": m.content}
            if m.reasoning is not None:
                turn["reasoning_content"] = m.reasoning
            if m.tool_calls:
                turn["tool_calls"] = [c.model_dump() for c in m.tool_calls]
            if m.tool_call_id is not None:
                turn["tool_call_id"] = m.tool_call_id
            if m.name is not None:
                turn["name"] = m.name
            if m.parts:
                turn["parts"] = [p.model_dump() for p in m.parts]
            turns.append(turn)
        out: dict[str, Any] = {"id": self.id, "conversations": turns}
        if self.tools:
            out["tools"] = [t.model_dump(exclude_none=True) for t in self.tools]
        return out


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A v1 record as v2: v1 stored tool calls as whatever the source had; normalise them to the v2 shape."""
    data = {**data, "record_version": RECORD_VERSION}
    messages = data.get("messages")
    if isinstance(messages, list):
        upgraded = []
        for i, m in enumerate(messages):
            if isinstance(m, dict) and m.get("tool_calls"):
                m = {**m, "tool_calls": [normalize_call(c, f"call_{i}_{j}") for j, c in enumerate(m["tool_calls"])]}
            upgraded.append(m)
        data["messages"] = upgraded
    return data


def normalize_call(call: Any, fallback_id: str) -> dict[str, Any]:
    """One tool call in any common shape → `{id, type, function: {name, arguments: JSON string}}`.

    Accepts OpenAI (`{id, type, function: {name, arguments}}`), flat (`{name, arguments|parameters}`,
    xlam / hermes / LLaMA-Factory) and arguments given as an object or a JSON string. Raises ValueError
    naming what is missing; the arguments string is not validated here (the contract checks it parses).
    """
    if not isinstance(call, dict):
        raise ValueError(f"a tool call must be an object, got {type(call).__name__}")
    inner = call.get("function")
    fn: dict[str, Any] = inner if isinstance(inner, dict) else call
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call has no function name")
    args: Any = next((fn[k] for k in ("arguments", "parameters", "args", "input") if k in fn), {})
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, sort_keys=False)
    call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else fallback_id
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def record_id(repo_id: str, config: str, split: str, row_index: int, turn: int | None = None) -> str:
    """Stable id from provenance, so re-ingesting the same row gives the same id (resume by id)."""
    key = f"{repo_id}|{config}|{split}|{row_index}" + ("" if turn is None else f"|{turn}")
    return hashlib.sha1(key.encode()).hexdigest()[:20]
