"""The coding agent: single-turn programming tasks with solutions."""

from agents.categories.category import Category

CATEGORY = Category(
    key="coding",
    title="coding instructions",
    intent="single-turn programming tasks with solutions",
    seed_queries=("code", "coder", "instruct", "magicoder", "evol"),
    tag_filters=(
        "task_categories:text-generation",
        "code",
        "coding",
        "programming",
        "task_categories:question-answering",
    ),
    keywords=("code", "coding", "programming", "python", "instruct", "instruction", "function", "solution"),
    evidence=("code",),
    subject="software",
    affinity={"agentic": 0.75, "agent": 0.75, "coding": 1.5, "code": 1.5},
)
