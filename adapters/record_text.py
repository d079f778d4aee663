"""One meaning for each piece of a conversation's text, kept on the record itself.

    prompt_text()    the prompt's identity: its user turns (dedup's exact/near keys, ingest's prompt_hash).
                     System prompts are left out on purpose: many datasets share one, which would make
                     unrelated rows look alike.
    context_text()   everything the target reads before answering (system, user and tool turns): what
                     the prompt-length filter, the report's prompt lengths, regeneration's partitions and
                     find's trial sizes measure.
    response_text()  the assistant side, reasoning and tool-call arguments included: what the report's
                     response lengths and find's trial sizes measure.
    length(counter)  context_text() measured by a counter (target tokens, or an estimate that says so).

A mixin, so the canonical record model (adapters/records.py) gains these in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class LengthCounter(Protocol):
    def count_many(self, texts: Sequence[str]) -> list[int]: ...


class _Turn(Protocol):
    """What these methods read of a message (adapters/records.Message has it): no import back into records."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def reasoning(self) -> str | None: ...
    @property
    def tool_calls(self) -> Sequence[Any] | None: ...  # each with .function.arguments


class ConversationText:
    messages: Sequence[_Turn]

    def prompt_text(self) -> str:
        return "\n".join(m.content for m in self.messages if m.role == "user")

    def context_text(self) -> str:
        return "\n".join(m.content for m in self.messages if m.role != "assistant")

    def response_text(self) -> str:
        parts: list[str] = []
        for m in self.messages:
            if m.role == "assistant":
                parts.extend(p for p in (m.reasoning, m.content) if p)
                parts.extend(c.function.arguments for c in m.tool_calls or [])
        return "\n".join(parts)

    def length(self, counter: LengthCounter) -> int:
        return counter.count_many([self.context_text()])[0]
