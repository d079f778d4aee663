"""The ten category briefs (intent, seed queries, Hub tag filters) and the domain reweighting.

Seed queries are short terms because the Hub's `search` matches repo ids only; tag filters reach the
datasets whose id lacks every seed word through what their cards declare (tags, task categories), as the Hub's
`filter` matches them; a task-category listing is broad, so its hits are ranked by their card text before any
is inspected (agents/category_agent.py). Relevance is then judged on the card, tags, features and rows. Weights say how much of a domain's samples a
category should supply: "agentic coding" favours trajectories, tool use and coding.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    title: str
    intent: str
    seed_queries: tuple[str, ...]
    tag_filters: tuple[str, ...] = ()
    keywords: tuple[str, ...]
    base_weight: float = 0.5


CATEGORIES: tuple[Category, ...] = (
    Category(
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
    ),
    Category(
        key="agentic",
        title="agentic / tool-use trajectories",
        intent="multi-step agent trajectories with tool calls (SWE agents, function calling)",
        seed_queries=("agent", "trajectories", "swe", "tool", "function-calling", "openhands"),
        tag_filters=(
            "agents",
            "agent",
            "tool-use",
            "function-calling",
            "tool-calling",
            "task_categories:text-generation",
        ),
        keywords=(
            "agent",
            "agentic",
            "trajectory",
            "trajectories",
            "tool",
            "tools",
            "swe",
            "function",
            "calling",
            "openhands",
            "repository",
            "bash",
        ),
    ),
    Category(
        key="reasoning",
        title="reasoning and math",
        intent="step-by-step reasoning, math problems",
        seed_queries=("math", "reasoning", "thoughts", "gsm"),
        tag_filters=("math", "reasoning", "chain-of-thought"),
        keywords=("math", "reasoning", "thought", "thoughts", "problem", "solution", "proof", "gsm8k"),
    ),
    Category(
        key="chat",
        title="general chat",
        intent="open-domain multi-turn conversations",
        seed_queries=("chat", "conversations", "dialog"),
        tag_filters=("conversational", "chat", "dialogue", "multi-turn"),
        keywords=("chat", "conversation", "conversations", "dialogue", "assistant", "support"),
    ),
    Category(
        key="standard",
        title="standard draft-training sets",
        intent="the sets EAGLE drafts are usually trained on: ShareGPT, UltraChat",
        seed_queries=("sharegpt", "ultrachat", "vicuna"),
        tag_filters=("sharegpt", "ultrachat"),
        keywords=("sharegpt", "ultrachat", "vicuna", "chat", "conversations", "sft"),
        base_weight=1.0,
    ),
    Category(
        key="review",
        title="code review and debugging",
        intent="finding and fixing bugs, reviewing code",
        seed_queries=("review", "bugfix", "debug"),
        tag_filters=(
            "code-review",
            "debugging",
            "bug-fix",
            "software-engineering",
            "task_categories:question-answering",
        ),
        keywords=("review", "bug", "bugfix", "debug", "debugging", "fix", "code"),
    ),
    Category(
        key="writing",
        title="long-form writing and analysis",
        intent="essays, reports, long answers",
        seed_queries=("writing", "essays", "longform", "analysis"),
        tag_filters=("writing", "long-form", "essays"),
        keywords=("writing", "essay", "essays", "longform", "long-form", "analysis", "report"),
    ),
    Category(
        key="native",
        title="target-native data",
        intent="responses already written by the target model family (Kimi, DeepSeek)",
        seed_queries=("kimi", "moonshot", "deepseek"),
        tag_filters=("kimi", "deepseek"),
        keywords=("kimi", "moonshot", "moonshotai", "deepseek", "k2", "native"),
        base_weight=1.0,
    ),
    Category(
        key="multilang",
        title="multi-language coding",
        intent="code in many programming languages",
        seed_queries=("multilang", "polyglot", "multi-language"),
        tag_filters=("code", "programming-languages", "multilingual-code"),
        keywords=("rust", "go", "typescript", "java", "multilang", "polyglot", "languages", "code"),
    ),
    Category(
        key="synthetic",
        title="large synthetic instruction sets",
        intent="large synthetic instruction mixes",
        seed_queries=("hermes", "infinity", "synthetic", "instruct"),
        tag_filters=("synthetic", "instruction-tuning", "sft"),
        keywords=("synthetic", "hermes", "infinity", "instruct", "instruction", "openhermes"),
    ),
)

BY_KEY = {c.key: c for c in CATEGORIES}

# Domain word → extra weight per category. Hand-written because it is policy, not data.
AFFINITY: dict[str, dict[str, float]] = {
    "agentic": {"agentic": 2.0, "coding": 0.75, "native": 0.5},
    "agent": {"agentic": 2.0, "coding": 0.75},
    "tool": {"agentic": 2.0},
    "coding": {"coding": 1.5, "review": 0.75, "multilang": 0.75, "agentic": 0.5},
    "code": {"coding": 1.5, "review": 0.75, "multilang": 0.75},
    "math": {"reasoning": 2.0},
    "reasoning": {"reasoning": 2.0},
    "chat": {"chat": 1.5, "standard": 0.5},
    "general": {"chat": 1.0, "standard": 1.0, "synthetic": 0.5},
    "writing": {"writing": 2.0},
    "analysis": {"writing": 1.5, "reasoning": 0.5},
}


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def category_weights(domain: str) -> dict[str, float]:
    """Normalised weight per category for a domain (sums to 1)."""
    raw = {c.key: c.base_weight for c in CATEGORIES}
    for word in tokens(domain):
        for key, extra in AFFINITY.get(word, {}).items():
            raw[key] += extra
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()}


# What a category's rows must show, by content kind (agents/content.py): any one kind in some sampled rows
# confirms the category; none in any row marks the dataset off-domain for it. Policy, like AFFINITY: it says
# what each category's data *is*, never which datasets are which. `native` is judged by the model names the
# rows carry (adapters.detect.names_target), so it has no content kinds of its own.
CONTENT_EVIDENCE: dict[str, tuple[str, ...]] = {
    "coding": ("code",),
    "agentic": ("tool_calls", "shell"),
    "reasoning": ("math", "stepwise"),
    "chat": ("exchange",),
    "standard": ("exchange",),
    "review": ("code",),
    "writing": ("long_prose",),
    "native": (),
    "multilang": ("code",),
    "synthetic": ("varied",),
}

# The subject a category's rows talk about, as an agents/topics.py domain: rows about it keep a candidate whose
# rows lack the category's content kinds (a bug-fix answered in prose, a question about git). None: the
# category's data may be about anything (chat, writing, math word problems).
SUBJECT: dict[str, str | None] = dict.fromkeys(("coding", "agentic", "review", "multilang"), "software")

# Content kinds that are the category's substance, not only its form: shown, they keep a candidate whatever
# its rows are about (tool calls for an insurance quote are tool use). A form alone (a conversation, long prose,
# varied prompts) does not outweigh rows that are all about one other domain.
SUBSTANTIVE_KINDS = frozenset({"code", "shell", "tool_calls", "math", "stepwise"})

# The sense a domain or category word has in this project, as the content kinds that confirm it. A card that
# uses some of these words while no sampled row shows any of their kinds uses them in another sense
# ("insurance agent", "genetic code", "medical coding", a film's secret agent): the rows decide, not the word.
_CODE = ("code",)
_AGENT = ("tool_calls", "shell")
TERM_SENSES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("code", "coding", "coder", "programming", "python", "rust", "typescript", "java"), _CODE),
    **dict.fromkeys(("bug", "bugfix", "debug", "debugging", "review"), _CODE),
    **dict.fromkeys(("agent", "agentic", "tool", "tools", "trajectory", "trajectories", "bash", "calling"), _AGENT),
    "function": ("code", "tool_calls"),
    **dict.fromkeys(("chat", "conversation", "conversations", "dialogue", "assistant"), ("exchange",)),
    **dict.fromkeys(("math", "reasoning", "proof", "gsm8k"), ("math", "stepwise")),
    **dict.fromkeys(("writing", "essay", "essays", "longform"), ("long_prose",)),
}

# How evidence reads in reasons and review.
KIND_NAMES = {
    "code": "code",
    "shell": "shell commands",
    "tool_calls": "tool calls",
    "exchange": "a conversation with an assistant",
    "dialogue": "several answering turns",
    "math": "formulas",
    "stepwise": "written-out reasoning",
    "long_prose": "long prose",
    "varied": "varied prompts",
}
