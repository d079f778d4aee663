"""Request and response shapes of the OpenAI-compatible chat API, as far as the dev server implements it."""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ChatRequest(BaseModel):
    # Unknown OpenAI fields are tolerated (clients send many); the ones that would change the answer
    # and that this server cannot honour are refused below instead of being ignored.
    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    # Integers bounded as the engines bound them (int64 seeds, int32 token counts): seed=2**70 is a 400,
    # not an overflow inside torch that answers a plain-text 500.
    max_tokens: int | None = Field(None, ge=0, le=2**31 - 1)
    max_completion_tokens: int | None = Field(None, ge=0, le=2**31 - 1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=-(2**63), lt=2**63)
    n: int = 1
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None  # text | json_object | json_schema: constrained decoding
    chat_template_kwargs: dict[str, Any] | None = None
    return_token_ids: bool = False  # vLLM's flag: prompt_token_ids and per-choice token_ids

    @model_validator(mode="after")
    def _supported(self) -> ChatRequest:
        if self.n != 1:
            raise ValueError("n must be 1 on the dev server")
        if self.stop:
            raise ValueError("stop sequences are not supported by the dev server")
        if self.logprobs:
            raise ValueError("logprobs are not supported by the dev server")
        unknown = set(self.chat_template_kwargs or {}) - {"enable_thinking", "thinking"}
        if unknown:
            raise ValueError(f"unsupported chat_template_kwargs: {sorted(unknown)}")
        for i, tool in enumerate(self.tools or []):
            fn = tool.get("function")
            if tool.get("type") != "function" or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise ValueError(f"tools[{i}] must be {{type: function, function: {{name, parameters}}}}")
        choice = self.tool_choice
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name") if choice.get("type") == "function" else None
            if name not in self.tool_names:
                raise ValueError(f"tool_choice names {name!r}, which is not among the tools")
        elif choice not in (None, "none", "auto", "required"):
            raise ValueError(f"tool_choice {choice!r} is not one of none, auto, required or a named function")
        if choice == "required" and not self.tools:
            raise ValueError("tool_choice 'required' needs tools")
        if self.forced_tools and self.response_format and self.response_format.get("type") != "text":
            raise ValueError("a forced tool_choice and a JSON response_format cannot be combined")
        return self

    @property
    def tool_names(self) -> set[str]:
        return {t["function"]["name"] for t in self.tools or []}

    @property
    def forced_tools(self) -> list[str] | None:
        """The tools one of which must be called (tool_choice required or named), else None."""
        if isinstance(self.tool_choice, dict):
            return [self.tool_choice["function"]["name"]]
        return sorted(self.tool_names) if self.tool_choice == "required" else None

    @property
    def parses_tool_calls(self) -> bool:
        """Free generation whose tool-call markers become `tool_calls` (tools offered, choice auto)."""
        return bool(self.tools) and self.tool_choice in (None, "auto")

    @property
    def thinking(self) -> bool:
        kwargs = self.chat_template_kwargs or {}
        return bool(kwargs.get("enable_thinking", kwargs.get("thinking", True)))

    @property
    def token_budget(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

    @property
    def include_usage(self) -> bool:
        return bool((self.stream_options or {}).get("include_usage"))


def error_body(message: str, kind: str = "invalid_request_error", code: int = 400) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def envelope(model: str, obj: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": obj, "created": int(time.time()), "model": model}
