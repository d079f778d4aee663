"""The multilang agent: code in many programming languages."""

from agents.categories.category import Category

CATEGORY = Category(
    key="multilang",
    title="multi-language coding",
    intent="code in many programming languages",
    seed_queries=("multilang", "polyglot", "multi-language"),
    tag_filters=("code", "programming-languages", "multilingual-code"),
    keywords=("rust", "go", "typescript", "java", "multilang", "polyglot", "languages", "code"),
    evidence=("code",),
    subject="software",
    affinity={"coding": 0.75, "code": 0.75},
)
