"""The Hub tools the LLM policy offers the model through the OpenAI `tools` API.

The function definitions are generated from the pydantic argument models (`openai.pydantic_function_tool`)
and the model's arguments are validated by the same models before anything runs: a bad call goes back
to the model as an error tool message (counted), never as code, SQL or a path. Results are trimmed and
`<` is JSON-escaped, so card text (untrusted) cannot close the <data> fence it is shown in.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionFunctionToolParam
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents import inspection
from agents.state import AgentCounts
from agents.tools import BudgetExceeded, HubTools, HubUnavailable

# The patterns travel in the tool schemas, and servers compile them into grammars for constrained decoding. Keep
# them to plain character classes and bounded counts: llama.cpp's schema-to-grammar converter rejects shorthands such as
# \w ("unknown escape"), and llama-cpp-python's server then dies on the request.
TERM = r"^[a-z0-9][a-z0-9 _.\-]{0,39}$"  # a repo-id fragment: nothing that could be markup or code
TAG = r"^[a-z_]{1,30}:[A-Za-z0-9_.\-]{1,60}$"  # e.g. task_categories:text-generation
# Hub repo ids are ASCII, owner and name at most 96 characters each. Bounded, so that a constrained decoder must close
# the string: with `+`, llama-cpp-python's server let SmolLM2 write one id until its context ran out.
REPO_ID = r"^[A-Za-z0-9_.\-]{1,96}/[A-Za-z0-9_.\-]{1,96}$"


class SearchArgs(BaseModel):
    """Search Hub dataset repos, most downloaded first: a short lowercase term matched against repo ids
    and/or a tag filter such as task_categories:text-generation."""

    model_config = ConfigDict(extra="forbid")
    query: str | None = Field(None, pattern=TERM, description="term in the repo id, e.g. trajectories")
    tag: str | None = Field(None, pattern=TAG, description="tag filter, e.g. task_categories:text-generation")

    @model_validator(mode="after")
    def _something_to_search(self) -> SearchArgs:
        if not (self.query or self.tag):
            raise ValueError("give a query, a tag or both")
        return self


class InspectArgs(BaseModel):
    """Read one dataset's card, license, features and first rows (only repos a search returned)."""

    model_config = ConfigDict(extra="forbid")
    repo_id: str = Field(pattern=REPO_ID, max_length=120, description="owner/name from a search result")


TOOL_ARGS: dict[str, type[BaseModel]] = {"search_hub": SearchArgs, "inspect_dataset": InspectArgs}


def tool_definitions() -> list[ChatCompletionFunctionToolParam]:
    return [openai.pydantic_function_tool(model, name=name) for name, model in TOOL_ARGS.items()]


def fence(payload: Any, limit: int) -> str:
    text = json.dumps(payload, ensure_ascii=False, default=str).replace("<", "\\u003c")
    return "<data>" + (text if len(text) <= limit else text[:limit] + " …[truncated]") + "</data>"


def _cut(value: Any, n: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:n]


RunInThread = Callable[..., Awaitable[Any]]  # fn, *args -> fn(*args) on the agents' executor
Progress = Callable[..., None]  # stage, **extra -> one progress event


class Toolbox:
    """One agent's tool runner: validates, counts, runs the Hub tools, keeps what the model found."""

    def __init__(
        self,
        hub: HubTools,
        category: str,
        meter: AgentCounts,
        limit: int,
        run: RunInThread,
        progress: Progress,
    ):
        self.hub, self.category, self.meter, self.limit = hub, category, meter, limit
        self.run, self.progress = run, progress  # run: a sync Hub call in the agent's thread pool
        self.hits: dict[str, dict[str, Any]] = {}
        self.inspected: dict[str, dict[str, Any]] = {}

    async def call(self, name: str, arguments: str) -> str:
        """The tool message for one call; every call counts, failed ones also as tool_errors."""
        self.meter.tool_calls += 1
        self.progress("tool", tool=name if name in TOOL_ARGS else "unknown")
        if name not in TOOL_ARGS:
            self.meter.llm_event("explore", "tool_args", f"unknown tool {name[:40]!r}", "sent_back")
            return self._error(f"unknown tool; use one of {sorted(TOOL_ARGS)}")
        try:
            args = TOOL_ARGS[name].model_validate_json(arguments)
        except ValidationError as exc:  # the model's input is not echoed back
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
            self.meter.llm_event("explore", "tool_args", f"{name}: {problems}", "sent_back")
            return self._error(f"invalid arguments for {name}: {problems[:300]}")
        try:
            payload = await (
                self._search(args) if isinstance(args, SearchArgs) else self._inspect(cast(InspectArgs, args))
            )
        except BudgetExceeded as exc:
            self.meter.exhausted(exc.kind)
            return self._error(f"{exc}; answer now with what you have")
        except HubUnavailable as exc:
            return self._error(f"hub unavailable: {str(exc)[:200]}")
        return payload if isinstance(payload, str) else fence(payload, self.limit)

    def _error(self, message: str) -> str:
        self.meter.tool_errors += 1
        return f"error: {message}"

    async def _search(self, args: SearchArgs) -> list[dict[str, Any]]:
        hits = await self.run(self.hub.search, self.category, args.query, args.tag)
        for hit in hits:
            self.hits.setdefault(hit["repo_id"], hit)
        return [
            {
                "repo_id": h["repo_id"],
                "downloads": h["downloads"],
                "gated": h["gated"],
                "tags": h["tags"][:8],
                "pretty_name": _cut(h["card_data"].get("pretty_name") or "", 80),
            }
            for h in hits
        ]

    async def _inspect(self, args: InspectArgs) -> dict[str, Any] | str:
        hit = self.hits.get(args.repo_id)
        if hit is None:
            return self._error("inspect only a repo_id that a search_hub result returned")
        facts = await self.run(self.hub.inspect, self.category, hit)
        self.inspected[args.repo_id] = facts
        return {
            "repo_id": args.repo_id,
            "license": _cut(hit["card_data"].get("license") or "none", 40),
            "access": facts["access"],
            "card_error": facts["card_error"],
            "card": _cut(facts["card_text"], 800),
            "content": inspection.content_counts(facts),  # what the sampled rows show, beside the card
            "configs": [
                {
                    "config": c["config"],
                    "split": c["split"],
                    "num_rows": c["num_rows"],
                    "features": _cut(c["features"], 300),
                    "rows": [{k: _cut(v) for k, v in list(r.items())[:8]} for r in c["rows"][:2]],
                }
                for c in facts["configs"][:4]
            ],
        }
