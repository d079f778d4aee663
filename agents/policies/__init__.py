"""Search policies: `heuristic` (default, deterministic, offline) and `llm` (OpenAI-compatible
endpoint, falls back to the heuristic). Both return the same typed outputs."""

from __future__ import annotations

from typing import Any

from agents.configuration import FindConfig
from agents.policies.heuristic import HeuristicPolicy, Query
from catalog.errors import DraftsetError


def make_policy(config: FindConfig, llm_client: Any | None = None, llm_model: str | None = None) -> HeuristicPolicy:
    if config.policy == "heuristic":
        return HeuristicPolicy(config)
    if llm_client is None:
        raise DraftsetError(
            "the llm policy needs an OpenAI-compatible endpoint",
            hint="set DRAFTSET_LLM_BASE_URL (and DRAFTSET_LLM_MODEL), or use --policy heuristic",
        )
    from agents.policies.llm import LLMPolicy

    return LLMPolicy(config, llm_client, llm_model)


__all__ = ["HeuristicPolicy", "Query", "make_policy"]
