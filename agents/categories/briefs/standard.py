"""The standard agent: the sets EAGLE drafts are usually trained on: ShareGPT, UltraChat."""

from agents.categories.category import Category

CATEGORY = Category(
    key="standard",
    title="standard draft-training sets",
    intent="the sets EAGLE drafts are usually trained on: ShareGPT, UltraChat",
    seed_queries=("sharegpt", "ultrachat", "vicuna"),
    tag_filters=("sharegpt", "ultrachat"),
    keywords=("sharegpt", "ultrachat", "vicuna", "chat", "conversations", "sft"),
    base_weight=1.0,
    evidence=("exchange",),
    affinity={"chat": 0.5, "general": 1.0},
)
