"""The LLM policy: the plain `openai` client with structured output (pydantic response_format).

Every reply is validated; an invalid, off-schema or failed reply is retried once, then the agent
falls back to the heuristic for that step and the fallback is counted (agent_runs/search_runs).
Replies are data: search terms are re-validated by a strict pattern, verdicts for repos the agent
did not send are ignored, and nothing the model writes becomes code or SQL.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

import openai
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents import prompts
from agents.categories import BY_KEY
from agents.configuration import FindConfig
from agents.policies.heuristic import HeuristicPolicy, Query
from agents.state import AgentCounts, Brief, Candidate

T = TypeVar("T", bound=BaseModel)


TERM = r"^[a-z0-9][a-z0-9 _.\-]{0,39}$"  # a repo-id fragment: nothing that could be markup or code


class QueryPlan(BaseModel):
    """Search terms for the Hub (each matched against repo ids)."""

    model_config = ConfigDict(extra="forbid")
    queries: list[Annotated[str, Field(pattern=TERM)]] = Field(min_length=1, max_length=12)


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo_id: str
    relevance: float = Field(ge=0, le=1)
    reason: str = Field(max_length=300)


class Judgement(BaseModel):
    """One verdict per candidate dataset."""

    model_config = ConfigDict(extra="forbid")
    verdicts: list[Verdict]


class InvalidReply(Exception):
    pass


class LLMPolicy:
    name = "llm"

    def __init__(self, config: FindConfig, client: Any | None, model: str | None):
        self.config = config
        self.client = client
        self.model = model or "default"
        self.fallback = HeuristicPolicy(config)

    async def _ask(self, meter: AgentCounts, system: str, user: str, schema: type[T]) -> T:
        """One validated structured reply, with one retry; raises InvalidReply after two failures."""
        last = "no attempt"
        for _attempt in range(2):
            budget = self.config.budget
            if meter.llm_calls >= budget.llm_calls or meter.llm_tokens >= budget.llm_tokens:
                if "llm" not in meter.budget_exhausted:
                    meter.budget_exhausted.append("llm")
                raise InvalidReply("llm budget exhausted")
            meter.llm_calls += 1
            try:
                completion = await self.client.chat.completions.parse(
                    model=self.model, response_format=schema, max_completion_tokens=1024,
                    messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
            except (openai.APIError, ValidationError, ValueError) as exc:
                last = f"{type(exc).__name__}: {str(exc)[:200]}"
                continue
            if completion.usage is not None:
                meter.llm_tokens += completion.usage.total_tokens
            parsed = completion.choices[0].message.parsed if completion.choices else None
            if parsed is None:
                last = "empty or refused reply"
                continue
            return parsed
        raise InvalidReply(last)

    def _fallback(self, meter: AgentCounts) -> None:
        meter.llm_fallbacks += 1

    async def queries(self, brief: Brief, meter: AgentCounts) -> list[Query]:
        cat = BY_KEY[brief.category]
        user = prompts.QUERY_USER.format(domain=brief.domain, title=cat.title, intent=cat.intent,
                                         seeds=", ".join(cat.seed_queries), max_queries=self.config.max_queries)
        try:
            plan = await self._ask(meter, prompts.QUERY_SYSTEM, user, QueryPlan)
        except InvalidReply:
            self._fallback(meter)
            return self.fallback.expand(brief)
        return [Query(search=t) for t in dict.fromkeys(plan.queries)][: self.config.max_queries]

    async def judge(self, brief: Brief, candidates: list[Candidate], meter: AgentCounts) -> list[Candidate]:
        judged = [c for c in candidates if c.status == "relevant"]
        if not judged:
            return candidates
        cat = BY_KEY[brief.category]
        data = json.dumps([{"repo_id": c.repo_id, "tags": c.tags[:12], "card": c.card_summary}
                           for c in judged], ensure_ascii=False)
        user = prompts.JUDGE_USER.format(domain=brief.domain, title=cat.title, intent=cat.intent, candidates=data)
        try:
            reply = await self._ask(meter, prompts.JUDGE_SYSTEM, user, Judgement)
        except InvalidReply:
            self._fallback(meter)
            return candidates
        verdicts = {v.repo_id: v for v in reply.verdicts}
        if not verdicts.keys() & {c.repo_id for c in judged}:  # off-schema in substance: about other repos
            self._fallback(meter)
            return candidates
        return [self._apply(c, verdicts.get(c.repo_id)) for c in candidates]

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
