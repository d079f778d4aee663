"""Typed records that flow through the find graph, and the graph state with its reducers.

Models travel through the checkpoint as plain dicts (`model_dump()`), so a resumed run reads
exactly what the interrupted one wrote; they are re-validated at each node boundary.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Brief(Record):
    """One category agent's assignment."""

    category: str
    weight: float  # the category's share of the domain; the plan's per-dataset quotas come from catalog/quota.py
    domain: str


class Candidate(Record):
    """A dataset a category agent found and scored. Card text is untrusted: it is only summarised."""

    repo_id: str
    revision: str | None = None
    category: str
    also_found_by: list[str] = Field(default_factory=list)
    score: float = 0.0
    reasons: list[str] = Field(default_factory=list)
    downloads: int = 0
    likes: int = 0
    license: str | None = None
    gated: bool = False
    tags: list[str] = Field(default_factory=list)
    n_rows: int | None = None
    size_bytes: int | None = None
    card_summary: str = ""
    mode: Literal["native", "regenerate"] = "regenerate"
    est_yield: float = 0.0
    prompt_tokens: float = 0.0
    response_tokens: float = 0.0
    flags: list[str] = Field(default_factory=list)
    status: Literal["relevant", "irrelevant"] = "relevant"
    # Why it is (ir)relevant from its content: {verdict, evidence, expected, senses, content, rows_read}
    # (agents/relevance.py); empty for candidates scored before content was consulted.
    relevance: dict[str, Any] = Field(default_factory=dict)
    schemas: list[dict[str, Any]] = Field(default_factory=list, description="config, split, features, sample_rows")


class AgentCounts(Record):
    """What one category agent spent: counted live by the tools, reported in agent_runs."""

    category: str
    started_at: float = Field(default_factory=time.time)
    hub_calls: int = 0
    cache_hits: int = 0
    llm_calls: int = 0
    llm_tokens: int = 0
    llm_fallbacks: int = 0
    tool_calls: int = 0  # llm policy: tool calls the model made (each Hub request also counts in hub_calls)
    tool_errors: int = 0  # ... of which rejected (bad arguments, unknown tool, budget spent, Hub error)
    budget_exhausted: list[str] = Field(default_factory=list)
    # llm policy: every problem with a model request, in order ({step, cause, detail, status, outcome}), and
    # the cause of the fallback to heuristic scores when there was one (causes: agents/policies/llm_calls.py).
    llm_events: list[dict[str, Any]] = Field(default_factory=list)
    llm_fallback_cause: str | None = None

    def llm_event(self, step: str, cause: str, detail: str, outcome: str, status: int | None = None) -> None:
        """outcome: retried (a repair or retry follows), sent_back (a tool error went back to the model),
        judge (the tool loop gave up; the model judges the heuristic's finds instead), fallback."""
        self.llm_events.append(
            {
                "step": step,
                "cause": cause,
                "detail": detail[:300],
                "status": status,
                "outcome": outcome,
                "at": time.time(),
            }
        )
        if outcome == "fallback":
            self.llm_fallbacks += 1
            self.llm_fallback_cause = cause

    def exhausted(self, kind: str) -> None:
        """Note a spent budget once (the llm loop and the heuristic steps after it may both hit it)."""
        if kind not in self.budget_exhausted:
            self.budget_exhausted.append(kind)


class AgentReport(AgentCounts):
    """What one category agent returns (also when it failed: status, error, the counts so far)."""

    status: Literal["ok", "failed"]
    error: str | None = None
    finished_at: float | None = None
    candidates: list[Candidate] = Field(default_factory=list)


class PlanItem(Record):
    repo_id: str
    category: str
    mode: str
    rows_to_take: int
    est_samples: int
    prompt_tokens: int
    response_tokens: int
    regen_hours: float
    hidden_state_bytes: int


class Plan(Record):
    plan_id: str
    samples_requested: int
    samples_existing: int
    existing_repos: list[str]
    items: list[PlanItem]
    totals: dict[str, float | int | str]  # str: the forecast line


class FindState(TypedDict, total=False):
    run_id: str
    domain: str
    samples: int
    config: dict[str, Any]
    started_at: float
    briefs: list[dict[str, Any]]
    # Parallel agents append here; LangGraph merges the writes with operator.add.
    reports: Annotated[list[dict[str, Any]], operator.add]
    candidates: list[dict[str, Any]]
    plan: dict[str, Any]
    summary: dict[str, Any]


class AgentInput(TypedDict):
    """The Send payload one category agent receives (not the whole state)."""

    run_id: str
    brief: dict[str, Any]
    config: dict[str, Any]
