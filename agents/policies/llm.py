"""The LLM policy: the plain `openai` client, asking in the structured forms the endpoint honours.

Once per run `prepare()` probes the endpoint (llm_probe.py): does it honour `response_format` json_schema,
does it return forced tool calls. Then, per agent:
  1. explore (only where tools work): the model drives the Hub tools (`llm_tools.Toolbox`, every call
     validated and counted) and judges the repos it inspected. A model that answers without using the
     tools (usual for small models) hands over to step 2; this is recorded (`no_tool_calls`), not a fallback.
  2. judge: the heuristic steps search and inspect, and the model rates those candidates in one short
     prompt; the answer's schema lists the candidate repo ids as an enum, so a constrained server cannot
     name any other repo.
Each answer is validated; one repair (or retry) follows a bad one; a second failure, a spent budget or a
dead endpoint is a fallback to the heuristic scores, counted in `llm_fallbacks` with its cause. Replies
are data: verdicts about repos outside the list are ignored, nothing the model writes becomes code or SQL.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents import prompts
from agents.categories import BY_KEY
from agents.configuration import FindConfig
from agents.policies.heuristic import HeuristicPolicy
from agents.policies.llm_calls import LLMProblem, complete, parse_json, validation_detail
from agents.policies.llm_probe import Capabilities, probe
from agents.policies.llm_tools import Toolbox, fence, tool_definitions
from agents.scoring import score_candidate
from agents.state import AgentCounts, Brief, Candidate

REASON_CHARS = 120
SAMPLE_CHARS = 240  # of one sampled row, per candidate the judge sees
RETRIED = ("not_json", "schema", "http_status", "connection")  # worth one more request; a timeout is not
ENDPOINT_DOWN = ("http_status", "connection", "timeout")


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo_id: str
    relevance: float = Field(ge=0, le=1)
    reason: str = Field(max_length=300)


class Judgement(BaseModel):
    """One verdict per dataset you inspected."""

    model_config = ConfigDict(extra="forbid")
    verdicts: list[Verdict]


def judgement_schema(repo_ids: list[str]) -> dict[str, Any]:
    """Judgement as a JSON schema whose repo_id is one of the listed repos (constrained servers obey it)."""
    verdict = {
        "type": "object",
        "additionalProperties": False,
        "required": ["repo_id", "relevance", "reason"],
        "properties": {
            "repo_id": {"type": "string", "enum": repo_ids},
            "relevance": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": {"type": "string", "maxLength": REASON_CHARS},
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdicts"],
        "properties": {"verdicts": {"type": "array", "items": verdict, "minItems": 1, "maxItems": len(repo_ids)}},
    }


class LLMPolicy(HeuristicPolicy):
    name = "llm"

    def __init__(
        self, config: FindConfig, client: Any | None, model: str | None, capabilities: Capabilities | None = None
    ):
        super().__init__(config)
        self.client = client
        self.model = model or "default"
        self.tools = tool_definitions()
        self.caps = capabilities

    async def prepare(self) -> Capabilities:
        """Probe the endpoint once per run (cached); the result is recorded in search_runs.llm_probe."""
        if self.caps is None:
            self.caps = await probe(self.client, self.model, timeout=min(60.0, self.config.budget.wall_time_s))
        return self.caps

    # -- step 1: the model drives the tools --------------------------------------------------------
    async def explore(self, brief: Brief, toolbox: Toolbox, meter: AgentCounts) -> list[Candidate] | None:
        """Scored candidates from the repos the model inspected, or None: run the heuristic steps (then judge)."""
        caps = await self.prepare()
        if not caps.reached:
            problem = caps.first_problem or {"cause": "connection", "detail": "the probe got no reply"}
            meter.llm_event("probe", problem["cause"], problem["detail"], "fallback", problem.get("status"))
            return None
        if not caps.tools:
            return None  # no tool calls on this endpoint: the model judges the heuristic's finds
        # A small context gets short tool results: about an eighth of it per result (4 chars a token).
        toolbox.limit = min(toolbox.limit, max(400, (caps.context or 10**6) // 2))
        cat = BY_KEY[brief.category]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.TOOLS_SYSTEM},
            {
                "role": "user",
                "content": prompts.TOOLS_USER.format(
                    domain=brief.domain,
                    title=cat.title,
                    intent=cat.intent,
                    seeds=", ".join(cat.seed_queries),
                    tags=", ".join(cat.tag_filters) or "none",
                    inspect_top=self.config.inspect_top,
                ),
            },
        ]
        deadline = meter.started_at + self.config.budget.wall_time_s * self.config.llm_time_share
        repaired = False
        slowest = 0.0  # the longest reply so far: a slow server (one slot, a CPU) leaves room for few more
        while True:
            if self._spent(meter, deadline, "explore", outcome="judge"):
                return None
            # vLLM/SGLang drop tool calls when a response_format is set, so tool rounds are unconstrained and
            # only the last chance asks for the Judgement schema: a repair, the last affordable call, or the
            # last call the time left allows (a model that never stops calling tools is asked to answer, rather
            # than cut off by the deadline in the middle of a tool round).
            final = (
                repaired or meter.llm_calls + 1 >= self.config.budget.llm_calls or time.time() + 2 * slowest >= deadline
            )
            ids = sorted(toolbox.inspected)
            try:
                asked = time.time()
                choice = await self._ask(meter, messages, deadline, ids if final else None, tools=True)
                slowest = max(slowest, time.time() - asked)
                message = choice.message
                if message.tool_calls and not final:
                    turn = message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True)
                    # content always present: chat templates that read message.content fail on a tool-call turn
                    # without it (llama-cpp-python's chatml-function-calling answered HTTP 500)
                    messages.append({"content": "", **turn})
                    for call in message.tool_calls:
                        fn = getattr(call, "function", None)  # only function tools are offered
                        content = await toolbox.call(fn.name if fn else "", fn.arguments if fn else "")
                        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                    continue
                if not toolbox.inspected:
                    if meter.tool_calls:
                        meter.llm_event(
                            "explore",
                            "schema",
                            "verdicts: the model answered before any dataset was inspected",
                            "judge",
                        )
                    else:
                        meter.llm_event(
                            "explore", "no_tool_calls", "the model answered in text without calling a tool", "judge"
                        )
                    return None
                verdicts = self._read(message.content, ids)
            except LLMProblem as problem:
                if repaired or problem.cause not in RETRIED:
                    # An endpoint that stopped answering will not answer the judge either: fall back now.
                    dead = problem.cause in ENDPOINT_DOWN
                    meter.llm_event(
                        "explore", problem.cause, problem.detail, "fallback" if dead else "judge", problem.status
                    )
                    return None
                meter.llm_event("explore", problem.cause, problem.detail, "retried", problem.status)
                repaired = True
                if problem.cause in ("not_json", "schema"):
                    messages.append({"role": "user", "content": prompts.RETRY.format(problem=problem.detail)})
                continue
            return [
                self._apply(
                    score_candidate(brief.category, brief.domain, toolbox.hits[repo], facts, self.config),
                    verdicts.get(repo),
                )
                for repo, facts in toolbox.inspected.items()
            ]

    # -- step 2: the model rates the heuristic's candidates ---------------------------------------
    async def judge(self, brief: Brief, candidates: list[Candidate], meter: AgentCounts) -> list[Candidate]:
        if not candidates or meter.llm_fallback_cause is not None:
            return candidates  # nothing to judge, or this agent already fell back (the endpoint is dead)
        cat = BY_KEY[brief.category]
        ids = [c.repo_id for c in candidates]
        listing = fence([_facts(c) for c in candidates], limit=800 * len(candidates))  # card + rows
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.JUDGE_SYSTEM},
            {
                "role": "user",
                "content": prompts.JUDGE_USER.format(
                    domain=brief.domain, title=cat.title, intent=cat.intent, datasets=listing
                ),
            },
        ]
        deadline = meter.started_at + self.config.budget.wall_time_s * 0.9  # the graph's hard cap is 1.0
        for attempt in (0, 1):
            if self._spent(meter, deadline, "judge", outcome="fallback"):
                return candidates
            try:
                choice = await self._ask(meter, messages, deadline, ids, tools=False)
                verdicts = self._read(choice.message.content, ids)
            except LLMProblem as problem:
                last = attempt == 1 or problem.cause not in RETRIED
                meter.llm_event(
                    "judge", problem.cause, problem.detail, "fallback" if last else "retried", problem.status
                )
                if last:
                    return candidates
                if problem.cause in ("not_json", "schema"):
                    messages.append({"role": "user", "content": prompts.RETRY.format(problem=problem.detail)})
                continue
            return [self._apply(c, verdicts.get(c.repo_id)) for c in candidates]
        return candidates

    # -- one request, one answer ------------------------------------------------------------------
    def _spent(self, meter: AgentCounts, deadline: float, step: str, outcome: str) -> bool:
        budget = self.config.budget
        kind = (
            "wall_time"
            if time.time() >= deadline
            else "llm"
            if meter.llm_calls >= budget.llm_calls or meter.llm_tokens >= budget.llm_tokens
            else None
        )
        if kind is None:
            return False
        meter.exhausted(kind)
        meter.llm_event(
            step, "budget", f"{kind} budget spent ({meter.llm_calls} calls, {meter.llm_tokens} tokens)", outcome
        )
        return True

    async def _ask(
        self,
        meter: AgentCounts,
        messages: list[dict[str, Any]],
        deadline: float,
        answer_ids: list[str] | None,
        tools: bool,
    ) -> Any:
        """One counted request. answer_ids: the final answer is due (Judgement about these repos): tools are
        closed and the schema is sent where the server honours it. None: a tool round."""
        request: dict[str, Any] = {"messages": messages, "temperature": 0}
        if tools:
            request |= {"tools": self.tools, "tool_choice": "none" if answer_ids is not None else "auto"}
        if answer_ids is None:
            request["max_completion_tokens"] = 256
        else:
            request["max_completion_tokens"] = min(1024, 64 + 64 * max(1, len(answer_ids)))
            form = self.caps.response_format("Judgement", judgement_schema(answer_ids)) if self.caps else None
            if form is not None and answer_ids:
                request["response_format"] = form
        timeout = max(1.0, deadline - time.time())
        choice, _ = await complete(self.client, self.model, meter, timeout, **request)
        return choice

    @staticmethod
    def _read(content: str | None, ids: list[str]) -> dict[str, Verdict]:
        """Verdicts by repo about the listed repos, or LLMProblem naming what is wrong."""
        try:
            answer = Judgement.model_validate(parse_json(content))
        except ValidationError as exc:
            raise LLMProblem("schema", validation_detail(exc)) from None
        verdicts = {v.repo_id: v for v in answer.verdicts if v.repo_id in ids}
        if not verdicts:
            raise LLMProblem(
                "schema",
                "verdicts: no verdict names a listed dataset"
                if ids
                else "verdicts: no dataset was inspected; inspect datasets first",
            )
        return verdicts

    @staticmethod
    def _apply(candidate: Candidate, verdict: Verdict | None) -> Candidate:
        """The model's verdict, made from the card and the sampled rows, moves the score and may settle
        relevance both ways: below 0.15 the candidate is off-domain; at 0.6 or more a candidate the content
        check alone marked off-domain (and nothing else disqualifies: text rows, a usable layout) is kept.
        Either way the relevance evidence says the model decided, and what the content check had said."""
        if verdict is None:
            return candidate
        delta = round(0.2 * (verdict.relevance - 0.5), 4)
        reason = " ".join(verdict.reason.split())[:160]
        status, flags = candidate.status, list(candidate.flags)
        relevance = dict(candidate.relevance) | {"llm": {"relevance": verdict.relevance, "reason": reason}}
        before = candidate.relevance.get("evidence", "no content check")
        if verdict.relevance < 0.15:
            status = "irrelevant"
            if relevance.get("verdict") != "off_domain":
                relevance |= {"verdict": "off_domain", "evidence": f"llm: off-domain ({reason}); content: {before}"}
        elif (
            verdict.relevance >= 0.6
            and "off_domain" in flags
            and not {"non_text", "empty"} & set(flags)
            and candidate.est_yield > 0
        ):
            status = "relevant"
            flags.remove("off_domain")
            relevance |= {"verdict": "on_domain", "evidence": f"llm: relevant ({reason}); content: {before}"}
        return candidate.model_copy(
            update={
                "score": round(candidate.score + delta, 4),
                "reasons": candidate.reasons + [f"{delta:+.2f} llm: {reason}"],
                "status": status,
                "flags": flags,
                "relevance": relevance,
            }
        )


def _facts(c: Candidate) -> dict[str, Any]:
    """What the judge sees of one candidate: short, so eight of them fit a small model's context. The rows are
    evidence beside the card: the content kinds counted in the sampled rows, and the start of one row."""
    features = sorted({k for s in c.schemas[:1] for k in (s.get("features") or {})})[:8]
    rows: list[Any] = next((s["sample_rows"] for s in c.schemas if s.get("sample_rows")), [])
    counts = c.relevance.get("content") or {}
    return {
        "repo_id": c.repo_id,
        "tags": c.tags[:5],
        "rows": c.n_rows,
        "columns": features,
        "card": c.card_summary[:200],
        "content": {k: f"{v}/{c.relevance.get('rows_read', 0)}" for k, v in counts.items() if v},
        "sample_row": json.dumps(rows[0], ensure_ascii=False, default=str)[:SAMPLE_CHARS] if rows else None,
    }
