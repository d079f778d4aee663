"""Token rows with loss masks, taken from the serving chat template's generation boundary.

For assistant turn j: `context = render(messages[:j], add_generation_prompt=True)` and
`upto = render(messages[:j+1])`. The context must be a prefix of `upto` (as text and as tokens); the
tokens after it, through the end-of-turn token, are trainable. No pattern is ever matched against
rendered text: the template itself says where the assistant's answer starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapters.records import Conversation, Message
from catalog.errors import DraftsetError
from pipeline.target.tool_render import for_template


class NotPrefixStable(DraftsetError):
    """The template renders the context differently once the answer is appended: masks would be wrong."""


@dataclass
class TokenRow:
    turn: int | None  # assistant message index (per-turn rows) or None (all turns in one row)
    input_ids: list[int]
    loss_mask: list[int] = field(default_factory=list)

    @property
    def n_trainable(self) -> int:
        return sum(self.loss_mask)


def template_tools(conversation: Conversation) -> list[dict[str, Any]] | None:
    """The conversation's tool declarations as `tools=` takes them (None when it has none)."""
    return conversation.to_export().get("tools") or None


def template_messages(conversation: Conversation, system_prompt: str | None) -> list[dict[str, Any]]:
    """The conversation in template keys (OpenAI/Kimi: reasoning_content, tool_calls); the system prompt is
    injected only when one is set and the conversation has no system turn."""
    messages = conversation.to_export()["conversations"]
    if system_prompt is not None and not any(m["role"] == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


class MaskBuilder:
    def __init__(self, tokenizer: Any, *, thinking: bool, end_of_turn: str, keep_past_reasoning: bool = False):
        self.tokenizer = tokenizer
        self.thinking = thinking
        self.keep_past_reasoning = keep_past_reasoning
        eot = tokenizer.convert_tokens_to_ids(end_of_turn)
        if eot is None or eot == tokenizer.unk_token_id or tokenizer.convert_ids_to_tokens(eot) != end_of_turn:
            raise DraftsetError(
                f"end-of-turn token {end_of_turn!r} is not a single token of this tokenizer",
                hint="pass the template's end-of-turn token with --end-of-turn",
            )
        self.eot_id = eot
        self.tools: list[dict[str, Any]] | None = None  # the conversation being rendered's declarations

    def _render(self, messages: list[dict[str, Any]], generation_prompt: bool) -> str:
        # tools= as the serving engine passes them, so the declarations sit where serving puts them
        return self.tokenizer.apply_chat_template(
            messages,
            tools=self.tools,
            tokenize=False,
            add_generation_prompt=generation_prompt,
            enable_thinking=self.thinking,
        )

    def _encode(self, *texts: str) -> list[list[int]]:
        # One batched call: the Python overhead per call costs more than encoding these short texts.
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]

    def _answer_span(self, messages: list[dict[str, Any]], j: int) -> tuple[str, list[int], int, int]:
        """(upto text, upto ids, start, end) of assistant turn j: ids[start:end] are its trainable tokens."""
        ctx_text = self._render(messages[:j], generation_prompt=True)
        upto_text = self._render(messages[: j + 1], generation_prompt=False)
        ctx_ids, upto_ids = self._encode(ctx_text, upto_text)
        if not upto_text.startswith(ctx_text):
            at = next((i for i, (a, b) in enumerate(zip(ctx_text, upto_text)) if a != b), len(upto_text))
            raise NotPrefixStable(
                f"chat template is not prefix-stable at assistant turn {j}: the context rendered with the "
                f"generation prompt differs from the conversation at char {at} "
                f"({ctx_text[at : at + 40]!r} vs {upto_text[at : at + 40]!r})",
                hint="fix the template: it must render past turns the same whatever follows them (a template "
                "that rewrites history, e.g. drops earlier reasoning, gives no generation boundary to mask from)",
            )
        if upto_ids[: len(ctx_ids)] != ctx_ids:
            raise NotPrefixStable(
                f"tokens of the context are not a prefix of the conversation's tokens at assistant turn {j}: "
                f"the generation boundary does not fall on a token boundary",
                hint="the generation prompt should end in a special token (e.g. <|im_middle|>)",
            )
        answer = upto_ids[len(ctx_ids) :]
        if self.eot_id not in answer:
            raise DraftsetError(
                f"assistant turn {j} does not end with the end-of-turn token "
                f"{self.tokenizer.convert_ids_to_tokens(self.eot_id)!r}",
                hint="check --end-of-turn against the chat template",
            )
        last_eot = len(answer) - 1 - answer[::-1].index(self.eot_id)
        # Anything the template adds after the end-of-turn token (e.g. a newline) is not generated.
        return upto_text, upto_ids, len(ctx_ids), len(ctx_ids) + last_eot + 1

    def _as_seen(self, messages: list[dict[str, Any]], j: int) -> list[dict[str, Any]]:
        """Turn j's context as the target saw it: earlier answers without their reasoning, which is what
        regeneration sent back and what serving clients send (reasoning_content is not returned to them)."""
        if self.keep_past_reasoning:
            return messages
        return [
            {k: v for k, v in m.items() if k != "reasoning_content"} if i < j and m["role"] == "assistant" else m
            for i, m in enumerate(messages)
        ]

    def rows(
        self,
        messages: list[dict[str, Any]],
        trainable: list[int],
        per_turn: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[TokenRow]:
        """One row per trainable assistant turn, or one row with every trainable turn masked.

        One row can only hold one rendering of the history, so all-turns rows keep every turn's
        reasoning; per-turn rows (the default) give each answer the context it was generated in.
        `tools` (the conversation's declarations) go to the template; tool calls are rendered by it, or
        written into the content for a template that ignores them (pipeline/target/tool_render.py).
        """
        self.tools = tools or None
        messages = for_template(self.tokenizer, messages)
        if per_turn:
            rows = []
            for j in trainable:
                _, ids, start, end = self._answer_span(self._as_seen(messages, j), j)
                rows.append(TokenRow(j, ids, [0] * start + [1] * (end - start) + [0] * (len(ids) - end)))
            return rows
        full_text = self._render(messages, generation_prompt=False)
        [full_ids] = self._encode(full_text)
        mask = [0] * len(full_ids)
        for j in trainable:
            upto_text, upto_ids, start, end = self._answer_span(messages, j)
            if not full_text.startswith(upto_text) or full_ids[: len(upto_ids)] != upto_ids:
                raise NotPrefixStable(
                    f"chat template is not prefix-stable: turn {j} renders differently once later turns follow",
                    hint="build one row per turn (--per-turn-rows) for this template",
                )
            mask[start:end] = [1] * (end - start)
        return [TokenRow(None, full_ids, mask)]


def trainable_turns(messages: list[Message], offset: int) -> list[int]:
    """Indices (in the template list, shifted by an injected system turn) of assistant turns to train."""
    return [i + offset for i, m in enumerate(messages) if m.role == "assistant" and m.train is not False]
