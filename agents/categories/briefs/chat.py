"""The chat agent: open-domain multi-turn conversations."""

from agents.categories.category import Category

CATEGORY = Category(
    key="chat",
    title="general chat",
    intent="open-domain multi-turn conversations",
    seed_queries=("chat", "conversations", "dialog"),
    tag_filters=("conversational", "chat", "dialogue", "multi-turn"),
    keywords=("chat", "conversation", "conversations", "dialogue", "assistant", "support"),
    evidence=("exchange",),
    affinity={"chat": 1.5, "general": 1.0},
)
