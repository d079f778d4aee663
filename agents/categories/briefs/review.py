"""The review agent: finding and fixing bugs, reviewing code."""

from agents.categories.category import Category

CATEGORY = Category(
    key="review",
    title="code review and debugging",
    intent="finding and fixing bugs, reviewing code",
    seed_queries=("review", "bugfix", "debug"),
    tag_filters=("code-review", "debugging", "bug-fix", "software-engineering", "task_categories:question-answering"),
    keywords=("review", "bug", "bugfix", "debug", "debugging", "fix", "code"),
    evidence=("code",),
    subject="software",
    affinity={"coding": 0.75, "code": 0.75},
)
