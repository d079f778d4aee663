"""The column names that say which side of an exchange a column holds (prompt, answer, instruction, label,
preference): read by column detection, numbered layouts, answers and the continuation rules."""

from __future__ import annotations

PROMPT_NAMES = (
    "instruction",
    "prompt",
    "question",
    "query",
    "input",
    "problem",
    "request",
    "task",
    "context",
    "user",
    "human",
    "source",
    "prefix",
)
RESPONSE_NAMES = (
    "output",
    "response",
    "answer",
    "completion",
    "solution",
    "answers",
    "reply",
    "target",
    "assistant",
    "gpt",
    "targets",
    "outputs",
    "continuation",
    "chosen",
    "generation",
    "text_output",
)
EXTRA_PROMPT_NAMES = ("input", "inputs", "context", "passage", "code", "document", "question", "query")
# Columns that state the task (Natural-Instructions `definition`, FLAN templates): they lead the prompt.
INSTRUCTION_NAMES = ("instruction", "instructions", "definition", "task_definition", "task_description", "directive")
LABEL_NAMES = ("label", "labels", "desirable", "is_desirable", "kto_label", "thumbs_up", "is_good", "preferred")
SCORE_NAMES = {
    "chosen": ("chosen_score", "score_chosen", "chosen_rating", "rating_chosen"),
    "rejected": ("rejected_score", "score_rejected", "rejected_rating", "rating_rejected"),
}
CHOSEN = ("chosen", "preferred", "better", "accepted", "winner", "response_chosen", "chosen_response")
REJECTED = ("rejected", "dispreferred", "worse", "loser", "response_rejected", "rejected_response")
