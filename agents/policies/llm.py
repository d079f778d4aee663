"""The LLM policy: the plain `openai` client in a bounded tool-calling loop.

The model searches and inspects the Hub through the agent's own tools (`llm_tools.Toolbox`: every call
validated and counted against the agent's Hub budget), then answers with a structured `Judgement` about
the repos it inspected. Each model request counts against the LLM call/token budgets and the loop stops at
its share of the wall-time budget. An invalid or off-schema answer (or a failed request) is retried once;
a second failure, or a spent budget, falls back to the inherited heuristic steps, counted in
`llm_fallbacks`. Replies are data: verdicts for repos the model did not inspect are ignored, and nothing
the model writes becomes code or SQL.
"""

from __future__ import annotations

import time
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents import prompts
from agents.categories import BY_KEY
from agents.configuration import FindConfig
from agents.policies.heuristic import HeuristicPolicy
from agents.policies.llm_tools import Toolbox, response_format, tool_definitions
from agents.scoring import score_candidate
from agents.state import AgentCounts, Brief, Candidate


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo_id: str
    relevance: float = Field(ge=0, le=1)
    reason: str = Field(max_length=300)


class Judgement(BaseModel):
    """One verdict per dataset you inspected."""

    model_config = ConfigDict(extra="forbid")
    verdicts: list[Verdict]


class LLMPolicy(HeuristicPolicy):
    """`explore` lets the model drive the tools; the inherited heuristic steps are its fallback."""

    name = "llm"

    def __init__(self, config: FindConfig, client: Any | None, model: str | None):
        super().__init__(config)
        self.client = client
        self.model = model or "default"
        self.tools = tool_definitions()
        self.answer_format = response_format(Judgement)

    async def explore(self, brief: Brief, toolbox: Toolbox, meter: AgentCounts) -> list[Candidate] | None:
        """Scored candidates from the repos the model inspected, or None: fall back to the heuristic."""
        cat = BY_KEY[brief.category]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.TOOLS_SYSTEM},
            {"role": "user", "content": prompts.TOOLS_USER.format(
                domain=brief.domain, title=cat.title, intent=cat.intent, seeds=", ".join(cat.seed_queries),
                tags=", ".join(cat.tag_filters) or "none", inspect_top=self.config.inspect_top)}]
        budget = self.config.budget
        deadline = meter.started_at + budget.wall_time_s * self.config.llm_time_share
        failures = 0
        while failures < 2:
            if time.time() >= deadline:
                meter.exhausted("wall_time")
                break
            if meter.llm_calls >= budget.llm_calls or meter.llm_tokens >= budget.llm_tokens:
                meter.exhausted("llm")
                break
            # Servers such as vLLM/SGLang drop tool calls when a response_format is set, so tool rounds are
            # free and only the last chance (a retry, or the last affordable call) is schema-constrained.
            final = failures > 0 or meter.llm_calls + 1 >= budget.llm_calls
            reply = await self._complete(meter, messages, final)
            if reply is None:
                failures += 1
                continue
            if reply.tool_calls and not final:
                messages.append(reply.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True))
                for call in reply.tool_calls:
                    fn = getattr(call, "function", None)  # only function tools are offered
                    content = await toolbox.call(fn.name if fn else "", fn.arguments if fn else "")
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                continue
            verdicts, problem = self._read_answer(None if reply.tool_calls else reply.content, toolbox)
            if problem is None:
                return [self._apply(score_candidate(brief.category, brief.domain, toolbox.hits[repo], facts,
                                                    self.config), verdicts.get(repo))
                        for repo, facts in toolbox.inspected.items()]
            failures += 1
            messages += [{"role": "assistant", "content": reply.content or ""},
                         {"role": "user", "content": prompts.TOOLS_RETRY.format(problem=problem)}]
        meter.llm_fallbacks += 1
        return None

    async def _complete(self, meter: AgentCounts, messages: list[dict[str, Any]], final: bool) -> Any | None:
        """One counted model request (final: tools closed, Judgement schema enforced); None when it failed."""
        meter.llm_calls += 1
        mode = {"tool_choice": "none", "response_format": self.answer_format} if final else {"tool_choice": "auto"}
        try:
            completion = await self.client.chat.completions.create(
                model=self.model, messages=messages, tools=self.tools, max_completion_tokens=1024, **mode)
        except (openai.APIError, ValidationError, ValueError):
            return None
        if completion.usage is not None:
            meter.llm_tokens += completion.usage.total_tokens
        return completion.choices[0].message if completion.choices else None

    @staticmethod
    def _read_answer(content: str | None, toolbox: Toolbox) -> tuple[dict[str, Verdict], str | None]:
        try:
            answer = Judgement.model_validate_json(content or "")
        except ValidationError as exc:
            return {}, f"the answer does not match the Judgement schema ({exc.error_count()} errors)"
        verdicts = {v.repo_id: v for v in answer.verdicts if v.repo_id in toolbox.inspected}
        if not verdicts:  # off-schema in substance: about repos it never inspected
            return {}, "no verdict about a dataset you inspected; inspect datasets first, then judge those"
        return verdicts, None

    @staticmethod
    def _apply(candidate: Candidate, verdict: Verdict | None) -> Candidate:
        if verdict is None:
            return candidate
        delta = round(0.2 * (verdict.relevance - 0.5), 4)
        reason = " ".join(verdict.reason.split())[:160]
        return candidate.model_copy(update={
            "score": round(candidate.score + delta, 4),
            "reasons": candidate.reasons + [f"{delta:+.2f} llm: {reason}"],
            "status": "irrelevant" if verdict.relevance < 0.15 else candidate.status,
        })
