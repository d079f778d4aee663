"""Strict, validated configuration of one `find` run; stored in the run's state and search_runs row.

Unknown keys and wrong types fail at load (extra="forbid"), so a typo never silently falls back to
a default. Runtime objects (Hub client, LLM client) are not configuration: they travel in the
LangGraph `configurable` dict and are rebuilt on `--resume`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.infer.detect import TARGET_FAMILIES


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentBudget(Strict):
    """Per-agent limits; exceeding one stops the agent's search (reported, not an error)."""

    hub_calls: int = Field(60, ge=1, description="Hub/viewer HTTP requests one agent may make")
    llm_calls: int = Field(12, ge=0, description="LLM requests one agent may make (llm policy)")
    llm_tokens: int = Field(60_000, ge=0, description="LLM prompt+completion tokens one agent may use")
    wall_time_s: float = Field(120.0, gt=0, description="hard wall-clock cap per agent (TimeoutPolicy)")


class Capacity(Strict):
    """What regeneration and capture cost: turns sample counts into hours and bytes."""

    throughput_tok_s: float = Field(830.0, gt=0, description="aggregate regeneration throughput (Kimi-K2.5, 8 GPUs)")
    hidden_size: int = Field(7168, ge=1, description="target hidden size")
    aux_layers: int = Field(3, ge=1, description="EAGLE-3 auxiliary layers captured")
    verifier_layers: int = Field(1, ge=0, description="extra layer captured for the verifier (last block)")
    dtype_bytes: int = Field(2, ge=1, description="bytes per value: 2 for bf16")
    chars_per_token: float = Field(4.0, gt=0, description="chars→tokens estimate (no tokenizer in find)")
    regen_response_tokens: int = Field(788, ge=1, description="expected answer length when regenerating")

    @property
    def hidden_state_bytes_per_token(self) -> int:
        """(aux + verifier) × hidden × bytes: 57,344 B/token for Kimi-K2.5 in bf16."""
        return (self.aux_layers + self.verifier_layers) * self.hidden_size * self.dtype_bytes


class FindConfig(Strict):
    """Everything that shapes one `draftset find` run."""

    policy: Literal["heuristic", "llm"] = "heuristic"
    budget: AgentBudget = AgentBudget()
    capacity: Capacity = Capacity()
    search_limit: int = Field(30, ge=1, description="results asked per Hub search")
    max_queries: int = Field(14, ge=1, description="searches per agent (seed words, then tag filters)")
    inspect_top: int = Field(12, ge=1, description="hits per agent whose card/features/rows are read")
    share_cap: float = Field(0.35, gt=0, le=1, description="max share of the new samples from one dataset")
    min_relevance: float = Field(0.05, ge=0, le=1, description="below this a candidate is marked irrelevant")
    content_relevance: bool = Field(
        True, description="check the card's words against the sampled rows' content (off: card words only)"
    )
    explore_slots: int = Field(
        2,
        ge=0,
        description="of inspect_top (a quarter at most), hits inspected though their id/tags share no word with the brief",
    )
    target_families: tuple[str, ...] = TARGET_FAMILIES  # the one list, shared with adapter proposal
    tool_result_chars: int = Field(4000, ge=200, description="llm policy: max chars of one tool result")
    llm_time_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="llm policy: share of the wall-time budget the "
        "tool loop may use; the rest is left for the heuristic fallback",
    )
    max_concurrency: int = Field(10, ge=1, description="category agents running at once")
    retry_attempts: int = Field(2, ge=1, description="attempts per agent on transient Hub errors")
    cache: bool = Field(True, description="cache Hub responses per repo revision under $DRAFTSET_HOME/cache/hub")
