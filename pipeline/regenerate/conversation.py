"""Turn-by-turn regeneration of one conversation: each user turn is answered by the target,
conditioned on the target's *own* earlier answers (the dataset's assistant turns are dropped).

Regenerate-mode rows keep only system and user messages: original assistant turns are replaced, and
tool results are dropped with them because they answer tool calls the target never made. The answer
points are the original ones: after every run of user messages that the source followed with a
non-user turn (or the end), so `user, assistant, user, assistant` gets two answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from adapters.records import Conversation, Message
from catalog.errors import DraftsetError
from pipeline.regenerate.client import Reply

Ask = Callable[[list[dict[str, Any]], int], Awaitable[Reply]]


class Skip(Exception):
    """The row is recorded in skipped.jsonl with this reason instead of the results."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def prompt_messages(conversation: Conversation) -> list[tuple[Message, bool]]:
    """(message, answer_after_it) for the system and user turns that are sent to the target."""
    kept: list[tuple[Message, bool]] = []
    messages = conversation.messages
    for index, message in enumerate(messages):
        if message.role not in ("system", "user"):
            continue
        following = messages[index + 1].role if index + 1 < len(messages) else None
        kept.append((message, message.role == "user" and following != "user"))
    if not any(m.role == "user" and m.content.strip() for m, _ in kept):
        raise Skip("empty_prompt", "no user turn with text to answer")
    return kept


def length_function(unit: str, tokenizer_path: str | None) -> Callable[[str], int]:
    """How prompt length is measured for partitioning: characters, or the target tokenizer's tokens."""
    if unit == "chars":
        return len
    from pipeline.model.tokenizer_load import load_tokenizer_json  # lazy: only when partitions count tokens

    if tokenizer_path is None:
        raise DraftsetError("partitions measured in tokens need a tokenizer",
                            hint="set `tokenizer` to the target's tokenizer.json, or measure in chars")
    return load_tokenizer_json(tokenizer_path).count


async def regenerate(conversation: Conversation, ask: Ask, *, thinking: bool,
                     include_length_truncated: bool) -> tuple[Conversation, list[dict[str, Any]]]:
    """The conversation with the target's answers, and per-turn metadata (finish_reason, usage, ...)."""
    context: list[dict[str, Any]] = []
    answered: list[Message] = []
    turns: list[dict[str, Any]] = []
    for message, answer_after in prompt_messages(conversation):
        context.append({"role": message.role, "content": message.content})
        answered.append(Message(role=message.role, content=message.content))
        if not answer_after:
            continue
        reply = await ask(context, len(turns))
        meta = asdict(reply)
        del meta["content"], meta["reasoning"]  # stored once, in the conversation itself
        turns.append(meta)
        where = f"turn {len(turns) - 1}"
        if reply.finish_reason == "length" and not include_length_truncated:
            raise Skip("length_truncated", f"{where}: finish_reason=length after "
                                           f"{reply.usage.get('completion_tokens', '?')} tokens")
        if not reply.content.strip() and not (reply.reasoning or "").strip():
            raise Skip("empty_response", f"{where}: the target returned no text")
        if not thinking and "<think>" in reply.content:
            raise Skip("leftover_think", f"{where}: <think> in the answer although thinking is off")
        # Only the answer goes back into the context: chat templates drop earlier turns' reasoning.
        context.append({"role": "assistant", "content": reply.content})
        answered.append(Message(role="assistant", content=reply.content, reasoning=reply.reasoning))
    return conversation.model_copy(update={"messages": answered}), turns
