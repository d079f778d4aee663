"""The native agent: responses already written by the target model family (Kimi, DeepSeek)."""

from agents.categories.category import Category

CATEGORY = Category(
    key="native",
    title="target-native data",
    intent="responses already written by the target model family (Kimi, DeepSeek)",
    seed_queries=("kimi", "moonshot", "deepseek"),
    tag_filters=("kimi", "deepseek"),
    keywords=("kimi", "moonshot", "moonshotai", "deepseek", "k2", "native"),
    base_weight=1.0,
    evidence=(),  # judged by the model names the rows carry (adapters.infer.detect.names_target), not by content
    affinity={"agentic": 0.5},
)
