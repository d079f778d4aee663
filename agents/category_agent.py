"""One category agent: build queries → search the Hub → inspect the most promising hits → score.

With the llm policy the model drives the same Hub tools first (`LLMPolicy.explore`); when it falls back,
the heuristic steps run. Budgets are enforced by the tools (Hub calls) and the LLM policy (calls/tokens,
its share of wall time); the hard wall-time cap is the graph's TimeoutPolicy. Running out of a budget
stops the search and is reported; any other exception propagates to the graph's error handler, which
records the failure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from agents.categories import BY_KEY, tokens
from agents.configuration import FindConfig
from agents.policies.llm_tools import Progress, RunInThread, Toolbox
from agents.scoring import score_candidate
from agents.state import AgentCounts, AgentReport, Brief, Candidate
from agents.tools import BudgetExceeded, HubTools, HubUnavailable


@dataclass
class AgentContext:
    hub: HubTools
    policy: Any
    executor: Executor
    emit: Callable[[dict[str, Any]], None]


def _prefilter(brief: Brief, hit: dict[str, Any]) -> float:
    """Cheap ordering of hits before spending Hub calls on them: term overlap with what the listing says of the
    repo (id, pretty name, tags and task categories, the card's text), then popularity. A repo whose id names
    none of the brief's words is ranked by its card as much as one that does."""
    words = set(tokens(brief.domain)) | set(BY_KEY[brief.category].keywords)
    pretty = str(hit["card_data"].get("pretty_name") or "")
    listed = " ".join([hit["repo_id"], pretty, " ".join(hit["tags"]), str(hit.get("description") or "")])
    return len(words & set(tokens(listed))) + min(hit["downloads"], 10**9) / 10**10


def _id_hints(brief: Brief, hit: dict[str, Any]) -> int:
    """Brief words found inside the repo id but not as whole words ("agents", "toolbelt", "coder"): how the
    Hub's substring search matched an id that the word overlap cannot see."""
    cat = BY_KEY[brief.category]
    words = set(tokens(brief.domain)) | set(cat.keywords) | {q for q in cat.seed_queries if q.isalnum()}
    id_tokens = set(tokens(hit["repo_id"]))
    return sum(1 for w in words if w not in id_tokens and any(w in t for t in id_tokens))


def to_inspect(brief: Brief, hits: list[dict[str, Any]], config: FindConfig) -> list[dict[str, Any]]:
    """The hits worth Hub calls: the best by word overlap, plus `explore_slots` (of inspect_top) kept for hits
    whose id and tags share no whole word with the brief, those with a seed inside their id first, then by
    popularity: a terse or non-English card is found only by reading its rows, which needs it inspected."""
    ranked = sorted(hits, key=lambda h: _prefilter(brief, h), reverse=True)
    explore = min(config.explore_slots, config.inspect_top // 4)  # a small inspect_top stays word-ranked
    by_words = ranked[: config.inspect_top - explore]
    rest = ranked[len(by_words) :]
    wordless = sorted(
        (h for h in rest if _prefilter(brief, h) < 1),  # overlap 0: only the popularity tiebreak is left
        key=lambda h: (_id_hints(brief, h), h["downloads"]),
        reverse=True,
    )
    extra = (wordless + [h for h in rest if h not in wordless])[:explore]
    return by_words + extra


def report_from(
    meter: AgentCounts, status: str, candidates: Sequence[Candidate] = (), error: str | None = None
) -> AgentReport:
    return AgentReport(
        **meter.model_dump(), status=status, error=error, finished_at=time.time(), candidates=list(candidates)
    )


async def run_category_agent(brief: Brief, config: FindConfig, ctx: AgentContext) -> AgentReport:
    meter = ctx.hub.meter(brief.category)
    loop = asyncio.get_running_loop()

    async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
        return await loop.run_in_executor(ctx.executor, fn, *args)

    def progress(stage: str, **extra: Any) -> None:
        ctx.emit(
            {
                "category": brief.category,
                "stage": stage,
                "hub_calls": meter.hub_calls,
                "cache_hits": meter.cache_hits,
                **extra,
            }
        )

    progress("start")
    candidates = None
    explore = getattr(ctx.policy, "explore", None)  # the llm policy: the model drives the tools
    if explore is not None:
        toolbox = Toolbox(ctx.hub, brief.category, meter, config.tool_result_chars, in_thread, progress)
        candidates = await explore(brief, toolbox, meter)
    if candidates is None:  # the heuristic policy, or the model's loop fell back (counted by the policy)
        candidates = await _search_and_inspect(brief, config, ctx, meter, in_thread, progress)
    progress("done", candidates=len(candidates))
    return report_from(meter, "ok", candidates)


async def _search_and_inspect(
    brief: Brief,
    config: FindConfig,
    ctx: AgentContext,
    meter: AgentCounts,
    in_thread: RunInThread,
    progress: Progress,
) -> list[Candidate]:
    """The heuristic steps: the policy's queries → search → inspect the best hits → score → judge."""
    hits: dict[str, dict[str, Any]] = {}
    candidates: list[Candidate] = []
    try:
        for query in await ctx.policy.queries(brief, meter):
            for hit in await in_thread(ctx.hub.search, brief.category, query.search, query.tag):
                hits.setdefault(hit["repo_id"], hit)
            progress("search", hits=len(hits))
        for hit in to_inspect(brief, list(hits.values()), config):
            try:
                facts = await in_thread(ctx.hub.inspect, brief.category, hit)
            except HubUnavailable as exc:  # one broken repo must not hide the agent's other finds
                facts = {"card_text": "", "card_error": f"inspect failed: {exc}", "access": "error", "configs": []}
            candidates.append(score_candidate(brief.category, brief.domain, hit, facts, config))
            progress("inspect", candidates=len(candidates))
    except BudgetExceeded as exc:
        meter.exhausted(exc.kind)
    return await ctx.policy.judge(brief, candidates, meter)
