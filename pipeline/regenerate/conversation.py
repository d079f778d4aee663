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


def _wire(message: Message) -> dict[str, Any]:
    """One kept turn as the OpenAI API takes it (replayed calls and their results stay structured)."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    calls = getattr(message, "tool_calls", None)
    if calls:
        wire["tool_calls"] = [c.model_dump() for c in calls]
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
        if message.name:
            wire["name"] = message.name
    return wire


def prompt_messages(conversation: Conversation) -> list[tuple[Message, bool]]:
    """(message, answer_after_it) for the turns sent to the target.

    Kept: system and user turns; assistant turns that made tool calls (replayed: the tool results that
    follow answer exactly those calls, so they cannot be swapped for the target's) and the tool turns
    answering them. Replaced: assistant text answers. Dropped: tool turns that answer no kept call.
    The target answers where the source had an assistant text answer, and at the end when the source
    ends on a user or tool turn."""
    kept: list[tuple[Message, bool]] = []
    messages = conversation.messages
    called: set[str] = set()

    def replayed(m: Message) -> bool:
        return m.role == "assistant" and bool(getattr(m, "tool_calls", None))

    def kept_turn(m: Message) -> bool:
        return m.role in ("system", "user") or replayed(m) or (m.role == "tool" and m.tool_call_id in called)

    for index, message in enumerate(messages):
        if replayed(message):
            called |= {c.id for c in message.tool_calls or ()}
        if not kept_turn(message):
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        # the run of user (or tool-result) turns ends here, and the source did not go on with a replayed call
        answer = message.role in ("user", "tool") and (
            following is None
            or not (
                following.role == message.role
                or replayed(following)
                or (following.role == "tool" and following.tool_call_id in called)
            )
        )
        kept.append((message, answer))
    if not any(m.role == "user" and m.content.strip() for m, _ in kept):
        raise Skip("empty_prompt", "no user turn with text to answer")
    return kept


def length_function(unit: str, tokenizer_path: str | None) -> Callable[[str], int]:
    """How prompt length is measured for partitioning: characters, or the target tokenizer's tokens."""
    if unit == "chars":
        return len
    from pipeline.target.tokenizer import load_tokenizer_json  # lazy: only when partitions count tokens

    if tokenizer_path is None:
        raise DraftsetError(
            "partitions measured in tokens need a tokenizer",
            hint="set `tokenizer` to the target's tokenizer.json, or measure in chars",
        )
    return load_tokenizer_json(tokenizer_path).count


async def regenerate(
    conversation: Conversation, ask: Ask, *, thinking: bool, include_length_truncated: bool
) -> tuple[Conversation, list[dict[str, Any]]]:
    """The conversation with the target's answers, and per-turn metadata (finish_reason, usage, ...).

    Replayed tool-calling turns are not the target's: they keep `train=False`. An answer in which the
    target calls a tool itself is kept as structured `tool_calls`; since no tool result exists for that
    call, the conversation ends there (turn metadata says `ended_on_tool_call`)."""
    context: list[dict[str, Any]] = []
    answered: list[Message] = []
    turns: list[dict[str, Any]] = []
    for message, answer_after in prompt_messages(conversation):
        context.append(_wire(message))
        # a replayed call is the source's, not the target's: kept for context, never trained
        kept = {"train": False, "reasoning": None} if message.role == "assistant" else {"reasoning": None}
        answered.append(message.model_copy(update=kept))
        if not answer_after:
            continue
        reply = await ask(context, len(turns))
        meta = asdict(reply)
        del meta["content"], meta["reasoning"], meta["tool_calls"]  # stored once, in the conversation itself
        turns.append(meta)
        where = f"turn {len(turns) - 1}"
        if reply.finish_reason == "length" and not include_length_truncated:
            raise Skip(
                "length_truncated",
                f"{where}: finish_reason=length after {reply.usage.get('completion_tokens', '?')} tokens",
            )
        if not reply.content.strip() and not (reply.reasoning or "").strip() and not reply.tool_calls:
            raise Skip("empty_response", f"{where}: the target returned no text")
        if not thinking and "<think>" in reply.content:
            raise Skip("leftover_think", f"{where}: <think> in the answer although thinking is off")
        answer = Message(role="assistant", content=reply.content, reasoning=reply.reasoning)
        if reply.tool_calls:
            answer = _with_calls(answer, reply.tool_calls)
            answered.append(answer)
            meta["ended_on_tool_call"] = True
            break
        # Only the answer goes back into the context: chat templates drop earlier turns' reasoning.
        context.append({"role": "assistant", "content": reply.content})
        answered.append(answer)
    return conversation.model_copy(update={"messages": answered}), turns


def _with_calls(answer: Message, calls: list[dict[str, Any]]) -> Message:
    """The answer with the target's calls, validated into the record's ToolCall shape."""
    return Message.model_validate({**answer.model_dump(exclude_none=True), "tool_calls": calls})
