"""The synthetic agent: large synthetic instruction mixes."""

from agents.categories.category import Category

CATEGORY = Category(
    key="synthetic",
    title="large synthetic instruction sets",
    intent="large synthetic instruction mixes",
    seed_queries=("hermes", "infinity", "synthetic", "instruct"),
    tag_filters=("synthetic", "instruction-tuning", "sft"),
    keywords=("synthetic", "hermes", "infinity", "instruct", "instruction", "openhermes"),
    evidence=("varied",),
    affinity={"general": 0.5},
)
