"""The find graph: plan → Send × one agent per category (concurrent) → merge → rank → plan_mix → record → summary.

Agents are async nodes with a RetryPolicy for transient Hub errors, a TimeoutPolicy for their wall-time
budget and an error handler that turns a failure into a recorded `failed` report, so one broken agent
never sinks the other nine. `record` is the only node that writes the catalog.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config, get_stream_writer
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, Send, TimeoutPolicy

from agents.categories import CATEGORIES, category_weights
from agents.category_agent import AgentContext, report_from, run_category_agent
from agents.configuration import FindConfig
from agents.forecast import measured_points
from agents.planning import holdings, plan_mix
from agents.recording import agent_totals, fallback_causes, record_run
from agents.state import AgentInput, AgentReport, Brief, Candidate, FindState, Plan
from agents.tools import HubTools, HubUnavailable
from catalog import Catalog
from catalog.hub import translate


@dataclass
class Runtime:
    """Live objects the nodes need; passed as configurable["runtime"], never checkpointed."""

    hub: HubTools
    policy: Any
    executor: Any
    catalog: Catalog
    has_token: bool
    train_steps: Callable[[float], int | None] | None = None  # FindEnv.train_steps: the recipe's steps for the forecast


def _runtime(config: RunnableConfig) -> Runtime:
    return config["configurable"]["runtime"]


async def plan(state: FindState) -> dict:
    """Turn the request into one brief per category, weighted for the domain (quotas are the plan's, per dataset)."""
    weights = category_weights(state["domain"])
    briefs = [
        Brief(
            category=c.key,
            weight=weights[c.key],
            domain=state["domain"],
        )
        for c in CATEGORIES
    ]
    return {"briefs": [b.model_dump() for b in briefs]}


def fan_out(state: FindState) -> list[Send]:
    return [
        Send("category_agent", AgentInput(run_id=state["run_id"], brief=b, config=state["config"]))
        for b in state["briefs"]
    ]


async def category_agent(payload: AgentInput, config: RunnableConfig) -> dict:
    rt = _runtime(config)
    writer = get_stream_writer()
    ctx = AgentContext(hub=rt.hub, policy=rt.policy, executor=rt.executor, emit=writer)
    report = await run_category_agent(Brief(**payload["brief"]), FindConfig(**payload["config"]), ctx)
    return {"reports": [report.model_dump()]}


def agent_failed(payload: AgentInput, error: NodeError) -> Command:
    """Error handler: record the failure with the counts so far; the graph goes on."""
    category = payload["brief"]["category"]
    hub = _runtime(get_config()).hub
    meter = hub.meter(category)
    mapped = translate(error.error, hub.endpoint)  # Hub errors read as one line naming the endpoint
    message = (str(mapped) if mapped else f"{type(error.error).__name__}: {error.error}")[:500]
    get_stream_writer()({"category": category, "stage": "failed", "error": message, "hub_calls": meter.hub_calls})
    # goto merge: when every agent failed there is no successful edge left to carry the run on.
    return Command(update={"reports": [report_from(meter, "failed", error=message).model_dump()]}, goto="merge")


def latest_reports(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One report per category, the last one written: `--retry-failed` appends a retried agent's new
    report after its failed one (the reports channel only appends)."""
    return list({r["category"]: r for r in reports}.values())


async def merge(state: FindState) -> dict:
    """Gather all agents' candidates; a repo found by several agents keeps its best category."""
    by_repo: dict[str, list[Candidate]] = {}
    for report in latest_reports(state["reports"]):
        for c in AgentReport(**report).candidates:
            by_repo.setdefault(c.repo_id, []).append(c)
    merged = []
    for found in by_repo.values():
        best = max(found, key=lambda c: (c.status == "relevant", c.score))
        others = sorted({c.category for c in found} - {best.category})
        merged.append(best.model_copy(update={"also_found_by": others}))
    return {"candidates": [c.model_dump() for c in merged]}


async def rank(state: FindState) -> dict:
    ordered = sorted(state["candidates"], key=lambda c: (c["status"] != "relevant", -c["score"], c["repo_id"]))
    return {"candidates": ordered}


async def plan_mix_node(state: FindState, config: RunnableConfig) -> dict:
    rt = _runtime(config)
    weights = category_weights(state["domain"])
    held = holdings(rt.catalog, weights)
    result = plan_mix(
        f"plan-{state['run_id']}",
        [Candidate(**c) for c in state["candidates"]],
        held,
        state["samples"],
        weights,
        FindConfig(**state["config"]),
        rt.has_token,
        measured_points(rt.catalog),
        rt.train_steps,
    )
    return {"plan": result.model_dump()}


async def record(state: FindState, config: RunnableConfig) -> dict:
    """The only node that writes the catalog (one transaction)."""
    reports = [AgentReport(**r) for r in latest_reports(state["reports"])]
    rt = _runtime(config)
    caps = getattr(rt.policy, "caps", None)  # the llm policy's probe of its endpoint
    record_run(
        rt.catalog,
        state,
        reports,
        [Candidate(**c) for c in state["candidates"]],
        Plan(**state["plan"]),
        time.time(),
        llm_probe=caps.model_dump() if caps is not None else None,
    )
    return {}


async def summary(state: FindState) -> dict:
    reports = [AgentReport(**r) for r in latest_reports(state["reports"])]
    return {
        "summary": {
            "agents_ok": sum(r.status == "ok" for r in reports),
            "agents_failed": [r.category for r in reports if r.status == "failed"],
            **agent_totals(reports),
            "relevant": sum(c["status"] == "relevant" for c in state["candidates"]),
            "llm_fallback_causes": fallback_causes(reports),
        }
    }


def build_graph(config: FindConfig) -> StateGraph:
    retry = RetryPolicy(max_attempts=config.retry_attempts, retry_on=HubUnavailable)
    timeout = TimeoutPolicy(run_timeout=config.budget.wall_time_s)
    g = StateGraph(FindState)
    g.add_node("plan", plan)  # request → one weighted brief per category
    # one per Send, concurrently; it reads the Send's AgentInput, not FindState, which add_node's types
    # cannot express without input_schema (and that would change what LangGraph passes it)
    g.add_node(
        "category_agent",
        category_agent,  # type: ignore[arg-type]
        retry_policy=retry,
        timeout=timeout,
        error_handler=agent_failed,
    )
    g.add_node("merge", merge)  # reducer output → unique candidates
    g.add_node("rank", rank)  # relevant first, by score
    g.add_node("plan_mix", plan_mix_node)  # N new samples, costs
    g.add_node("record", record)  # the one catalog write
    g.add_node("summary", summary)  # counts for the user
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["category_agent"])
    g.add_edge("category_agent", "merge")  # waits for every agent
    g.add_edge("merge", "rank")
    g.add_edge("rank", "plan_mix")
    g.add_edge("plan_mix", "record")
    g.add_edge("record", "summary")
    g.add_edge("summary", END)
    return g
