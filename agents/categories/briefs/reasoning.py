"""The reasoning agent: step-by-step reasoning, math problems."""

from agents.categories.category import Category

CATEGORY = Category(
    key="reasoning",
    title="reasoning and math",
    intent="step-by-step reasoning, math problems",
    seed_queries=("math", "reasoning", "thoughts", "gsm"),
    tag_filters=("math", "reasoning", "chain-of-thought"),
    keywords=("math", "reasoning", "thought", "thoughts", "problem", "solution", "proof", "gsm8k"),
    evidence=("math", "stepwise"),
    affinity={"math": 2.0, "reasoning": 2.0, "analysis": 0.5},
)
