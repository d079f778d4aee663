"""The role alias table: raw role labels seen in public chat datasets → canonical roles.

Inference maps labels only through this table. A label that is not here is left unmapped on purpose,
so the contract fails naming it until a person decides (`draftset adapters map REPO LABEL=ROLE`).
"""

from __future__ import annotations

# Lower-cased raw label → canonical role. Sources: ShareGPT (human/gpt), OpenAI (user/assistant/tool),
# nebius (ai), LLaMA-Factory tags (observation/function_call), ipython (Llama 3 tool results), etc.
ROLE_ALIASES: dict[str, str] = {
    **dict.fromkeys(["system", "system_prompt", "developer"], "system"),
    **dict.fromkeys(
        ["user", "human", "customer", "client", "prompter", "question", "instruction", "input", "usr", "person"], "user"
    ),
    **dict.fromkeys(
        [
            "assistant",
            "gpt",
            "model",
            "bot",
            "chatgpt",
            "chatbot",
            "ai",
            "agent",
            "bard",
            "claude",
            "output",
            "response",
            "answer",
            "gpt4",
            "gpt-4",
            "llm",
        ],
        "assistant",
    ),
    **dict.fromkeys(
        [
            "tool",
            "function",
            "observation",
            "ipython",
            "env",
            "environment",
            "tool_response",
            "function_response",
            "tool_result",
            "function response",
            "tool response",
        ],
        "tool",
    ),
    # LLaMA-Factory / ShareGPT tool-use: the turn's text is the assistant's call itself.
    **dict.fromkeys(["function_call", "tool_call", "tool_calls"], "tool_call"),
}

# Keys that name the role inside a turn dict, most to least likely; used to rank candidates.
ROLE_KEYS = ("role", "from", "speaker", "author", "sender", "type")
# Keys that hold the text of a turn, most to least likely.
CONTENT_KEYS = ("content", "value", "text", "message", "utterance", "body")
# Columns that usually hold the turn list (only a preference; any list-of-dicts column is considered).
TURN_LIST_COLUMNS = (
    "messages",
    "conversations",
    "conversation",
    "trajectory",
    "dialog",
    "dialogue",
    "turns",
    "chat",
    "chosen",
)
# Per-turn boolean keys that say whether a turn is trained on.
TRAIN_FLAG_KEYS = ("mask", "train", "trainable", "loss", "weight")
# Per-turn keys holding separated reasoning text.
REASONING_KEYS = ("reasoning_content", "reasoning", "thinking", "thought")
# (open, close) markers of reasoning inside assistant text; (open, close) wrappers to strip off answers.
REASONING_DELIMITERS = (
    ("<think>", "</think>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("<reasoning>", "</reasoning>"),
    ("<thinking>", "</thinking>"),
)
ANSWER_WRAPPERS = (("<|begin_of_solution|>", "<|end_of_solution|>"),)
# Column layouts: (prompt columns, response column), first match wins. Extra prompt columns
# (e.g. `input`) are optional: they are joined to the prompt when present and non-empty.
COLUMN_PAIRS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("instruction", "input"), "output"),
    (("instruction", "input"), "response"),
    (("prompt",), "completion"),
    (("prompt",), "response"),
    (("question",), "answer"),
    (("problem",), "solution"),
    (("query",), "answers"),
    (("input",), "output"),
    (("query",), "response"),
)
SYSTEM_COLUMNS = ("system", "system_prompt", "system_message")


def canonical_role(label: str) -> str | None:
    """The canonical role for a raw label, or None when the table does not know it."""
    return ROLE_ALIASES.get(label.strip().lower())
