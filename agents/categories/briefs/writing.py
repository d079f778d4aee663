"""The writing agent: essays, reports, long answers."""

from agents.categories.category import Category

CATEGORY = Category(
    key="writing",
    title="long-form writing and analysis",
    intent="essays, reports, long answers",
    seed_queries=("writing", "essays", "longform", "analysis"),
    tag_filters=("writing", "long-form", "essays"),
    keywords=("writing", "essay", "essays", "longform", "long-form", "analysis", "report"),
    evidence=("long_prose",),
    affinity={"writing": 2.0, "analysis": 1.5},
)
