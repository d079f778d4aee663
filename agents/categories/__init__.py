"""The search agents' category briefs (intent, seed queries, Hub tag filters, content evidence, domain
affinity), one module each under briefs/, and the domain reweighting.

Seed queries are short terms because the Hub's `search` matches repo ids only; tag filters reach the
datasets whose id lacks every seed word through what their cards declare (tags, task categories), as the Hub's
`filter` matches them; a task-category listing is broad, so its hits are ranked by their card text before any
is inspected (agents/category_agent.py). Relevance is then judged on the card, tags, features and rows. Weights
say how much of a domain's samples a category should supply: "agentic coding" favours trajectories, tool use
and coding.

Adding a category is one new file, agents/categories/briefs/<key>.py, declaring `CATEGORY = Category(...)`
(registry.py discovers it), plus its test; every count of agents is len(CATEGORIES).
"""

from __future__ import annotations

import re

from agents.categories.category import Category
from agents.categories.kinds import KIND_NAMES, SUBSTANTIVE_KINDS, TERM_SENSES
from agents.categories.registry import discover

CATEGORIES: tuple[Category, ...] = discover()
BY_KEY = {c.key: c for c in CATEGORIES}

__all__ = [
    "BY_KEY",
    "CATEGORIES",
    "KIND_NAMES",
    "SUBSTANTIVE_KINDS",
    "TERM_SENSES",
    "Category",
    "category_weights",
    "tokens",
]


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def category_weights(domain: str) -> dict[str, float]:
    """Normalised weight per category for a domain (sums to 1): each brief's base weight, plus its affinity
    for every word of the domain (a word said twice counts twice)."""
    raw = {c.key: c.base_weight for c in CATEGORIES}
    for word in tokens(domain):
        for c in CATEGORIES:
            raw[c.key] += c.affinity.get(word, 0.0)
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()}
