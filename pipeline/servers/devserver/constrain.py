"""Constrained decoding for the dev server: `response_format` (json_schema, json_object) and forced tool calls.

Built on llguidance (the grammar engine behind llama.cpp's and vLLM's guidance backends): a JSON schema
becomes a token-level grammar, and a transformers `LogitsProcessor` masks every token the grammar does not
allow at each step, so the reply parses and validates by construction, even from a 135M model. When the
grammar is complete only the end-of-turn token is allowed, so the answer ends where the JSON ends.

A forced tool call (`tool_choice` "required" or a named function) is decoded the way vLLM does it: the
output is constrained to `{"name": ..., "arguments": {...}}` for the allowed tools, and the server returns
it as `tool_calls` without any template markers (it knows it asked for a call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transformers import LogitsProcessor  # the dev server is a model server: transformers is loaded anyway

from pipeline.servers.devserver.errors import RequestError

if TYPE_CHECKING:
    import torch

# Compact JSON (no free whitespace): a small model cannot loop on blank lines until max_tokens.
COMPACT = {"whitespace_flexible": False}


def response_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema a response_format asks for; None for plain text. RequestError when malformed."""
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise RequestError("response_format.json_schema.schema must be a JSON schema object")
        return schema
    raise RequestError(f"response_format.type {kind!r} is not one of text, json_object, json_schema")


def forced_call_schema(tools: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """One call to any of `names`: {"name": <const>, "arguments": <that tool's parameters>}."""
    choices = []
    for tool in tools:
        fn = tool.get("function") or {}
        if fn.get("name") in names:
            params = fn.get("parameters") or {"type": "object"}
            choices.append(
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "arguments"],
                    "properties": {"name": {"const": fn["name"]}, "arguments": params},
                }
            )
    return choices[0] if len(choices) == 1 else {"anyOf": choices}


class Grammars:
    """The engine's llguidance tokenizer (built once, it scans the vocabulary) and per-request matchers."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_id: int):
        import llguidance.hf

        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size, eos_token=eos_id)
        self.vocab_size = vocab_size

    def processor(self, schema: dict[str, Any]) -> Any:
        """A fresh logits processor for one request; RequestError when the schema cannot be compiled."""
        import llguidance

        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                {**schema, "x-guidance": {**COMPACT, **schema.get("x-guidance", {})}}
            )
            matcher = llguidance.LLMatcher(self.tokenizer, grammar)
        except (ValueError, TypeError, RuntimeError) as exc:
            raise RequestError(f"the JSON schema cannot be used for constrained decoding: {exc}") from exc
        if matcher.is_error():
            raise RequestError(f"the JSON schema cannot be used for constrained decoding: {matcher.get_error()}")
        return _Masking(matcher, self.vocab_size)


class _Masking(LogitsProcessor):
    """Masks disallowed tokens; consumes each sampled token into the matcher before the next step."""

    def __init__(self, matcher: Any, vocab_size: int):
        import llguidance.torch
        import torch

        self.matcher = matcher
        self.mask = llguidance.torch.allocate_token_bitmask(1, vocab_size)
        self.prompt_len: int | None = None
        self.shifts = torch.arange(32, dtype=torch.int32)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import llguidance.torch

        if self.prompt_len is None:
            self.prompt_len = input_ids.shape[1]
        elif input_ids.shape[1] > self.prompt_len:
            if not self.matcher.consume_token(int(input_ids[0, -1])):
                raise RuntimeError(f"constrained decoding: token rejected: {self.matcher.get_error()}")
        llguidance.torch.fill_next_token_bitmask(self.matcher, self.mask, 0)
        # Unpacked here: llguidance.torch's apply helper compiles a kernel on first use (seconds on CPU).
        allowed = ((self.mask[0].unsqueeze(-1) >> self.shifts) & 1).bool().flatten()[: scores.shape[-1]]
        return scores.masked_fill(~allowed.to(scores.device), float("-inf"))
