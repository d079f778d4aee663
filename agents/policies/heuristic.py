"""The deterministic offline policy: query expansion from the category brief, heuristic scores as-is."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agents.categories import BY_KEY, tokens
from agents.configuration import FindConfig
from agents.state import AgentCounts, Brief, Candidate


class Query(BaseModel):
    """One Hub search: a free-text term (matches repo ids) and/or a tag filter."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    search: str | None = None
    tag: str | None = None


class HeuristicPolicy:
    name = "heuristic"

    def __init__(self, config: FindConfig):
        self.config = config

    async def queries(self, brief: Brief, meter: AgentCounts) -> list[Query]:
        return self.expand(brief)

    def expand(self, brief: Brief) -> list[Query]:
        """Seed terms, then domain words this category cares about, then tag filters."""
        cat = BY_KEY[brief.category]
        terms = list(cat.seed_queries) + [w for w in tokens(brief.domain) if w in cat.keywords]
        queries = [Query(search=t) for t in dict.fromkeys(terms)]
        queries += [Query(tag=t) for t in cat.tag_filters]
        return queries[: self.config.max_queries]

    async def judge(self, brief: Brief, candidates: list[Candidate], meter: AgentCounts) -> list[Candidate]:
        return candidates  # heuristic scores already carry their reasons
