"""The content kinds a category's rows can show (agents/content.py detects them), and the word-level policy
built on them: which kinds are a category's substance, and what a domain word means in this project.

Keyed by kind or by word, never by category: per-category facts live on each brief (briefs/<key>.py).
"""

from __future__ import annotations

# Every kind agents/content.py counts, and how it reads in reasons and review. The one list of kinds.
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
