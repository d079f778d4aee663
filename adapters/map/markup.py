"""Template markup and wrapper tags that must not be left inside a canonical turn's content: the one list.

A chat template's control text (`[INST]`, `<|im_start|>`, `### Human:`), a reasoning or answer wrapper
(`<think>`, `<answer>`) or a tool-call tag (`[TOOL_CALLS]`, `<tool_call>`) found in a mapped turn means
the adapter did not take the structure apart: the model would be trained on the wrapper as if it were
text. The list is data, not code: one `Markup` entry per family of markers, each with the roles in which
it is a problem (a system prompt may legitimately *describe* `<tool_call>` tags, a user may ask for the
answer inside `<answer>` tags; an assistant turn holding them was not parsed). Inference (detectors of
rendered templates, reasoning delimiters, tool formats) and the contract's `markup` check both read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ALL_ROLES = frozenset({"system", "user", "assistant", "tool"})
SPEAKING = frozenset({"user", "assistant"})
ASSISTANT = frozenset({"assistant"})


@dataclass(frozen=True)
class Markup:
    name: str  # stable: shown in contract details and counted by
    pattern: str  # a regular expression over one turn's content
    what: str  # why it is markup, for the one-line detail
    hints: tuple[str, ...]  # literals a match must contain: a substring test first keeps the scan cheap
    roles: frozenset[str] = ALL_ROLES  # the turn roles in which finding it is a problem


MARKUP: tuple[Markup, ...] = (
    # Chat-template control text: never content, whoever speaks.
    Markup("llama2_inst", r"\[/?INST\]", "Llama-2 chat template [INST] tags", ("INST]",)),
    Markup("llama2_sys", r"<</?SYS>>", "Llama-2 chat template <<SYS>> tags", ("SYS>>",)),
    Markup("chatml", r"<\|im_(?:start|end|sep)\|>", "ChatML <|im_start|>/<|im_end|> tokens", ("<|im_",)),
    Markup(
        "llama3_header",
        r"<\|(?:start_header_id|end_header_id|eot_id|begin_of_text|end_of_text|eom_id|python_tag)\|>",
        "Llama-3 header tokens",
        ("<|",),
    ),
    Markup(
        "gemma_turn",
        r"<(?:start|end)_of_turn>|<bos>|<eos>",
        "Gemma <start_of_turn>/<bos> tokens",
        ("_of_turn>", "<bos>", "<eos>"),
    ),
    Markup(
        "role_tokens",
        r"<\|(?:user|assistant|system|end|endoftext|im_middle|channel|message|tool|observation)\|>",
        "role or end-of-turn special tokens (Zephyr, Phi, GLM, harmony, Kimi)",
        ("<|",),
    ),
    Markup(
        "mistral_tools",
        r"\[(?:AVAILABLE_TOOLS|/AVAILABLE_TOOLS|TOOL_RESULTS|/TOOL_RESULTS)\]",
        "Mistral tool tags",
        ("TOOL", "TOOLS]"),
    ),
    Markup("sequence_tokens", r"^\s*<s>|</s>\s*$", "<s>/</s> sequence tokens at a turn's edge", ("<s>", "</s>")),
    # A rendered transcript inside one turn: its own speaker headings.
    Markup(
        "alpaca_headings",
        r"(?im:^[ \t]*#{2,4}[ \t]*(?:instruction|response|human|assistant)[ \t]*(?::|$))",
        "### Instruction/### Response or ### Human/### Assistant headings",
        ("##",),
        SPEAKING,
    ),
    Markup(
        "speaker_prefix",
        r"(?m:^)[ \t]*(?:USER|ASSISTANT|SYSTEM|Human|Assistant|User|GPT|HUMAN)[ \t]*:",
        "speaker labels (USER:/ASSISTANT:) at a line start: a transcript left inside a turn",
        ("USER", "ASSISTANT", "SYSTEM", "Human", "Assistant", "User", "GPT", "HUMAN"),
        SPEAKING,
    ),
    # Reasoning and answer wrappers: left inside an answer they were not split off.
    Markup(
        "reasoning_tags",
        r"</?(?:think|thinking|reasoning|thought)>|<\|(?:begin|end)_of_thought\|>|◁/?think▷",
        "reasoning tags (<think>, <|begin_of_thought|>, ◁think▷)",
        ("think", "reasoning>", "thought", "◁"),
        ASSISTANT,
    ),
    Markup(
        "answer_tags",
        r"</?(?:answer|final_answer|solution)>|<\|(?:begin|end)_of_solution\|>",
        "answer wrapper tags (<answer>, <|begin_of_solution|>)",
        ("answer>", "solution"),
        ASSISTANT,
    ),
    # Tool calls written in text and never parsed into structured calls.
    Markup(
        "tool_call_tags",
        r"\[TOOL_CALLS\]|</?tool_call>|<\|tool_calls?_(?:section_)?begin\|>|<functioncall>|<function=|"
        r"<\|tool_call_begin\|>|(?m:^)\s*Action:\s*\S+\s*\n\s*Action Input:",
        "tool-call markup ([TOOL_CALLS], <tool_call>, <functioncall>, Action:/Action Input:)",
        ("TOOL_CALLS", "tool_call", "<function", "Action Input:"),
        ASSISTANT,
    ),
)

# Per role, the entries that apply, compiled once: the per-turn scan does no filtering of its own.
_BY_ROLE = {role: tuple((m, re.compile(m.pattern), m.hints) for m in MARKUP if role in m.roles) for role in ALL_ROLES}


# Speaker headings of rendered transcripts, which the entries above flag only at a line start.
_SPEAKERS = r"(?:USER|ASSISTANT|SYSTEM|Human|Assistant|User|System|GPT|FUNCTION RESPONSE|FUNCTION CALL)[ \t]*:"
# A role name alone between template tokens (`<|im_start|>user`, `<|start_header_id|>user<|end_header_id|>`).
_ROLE_WORD = re.compile(r"(?i)^(?:system|user|assistant|tool|human|gpt|model|function|ipython|observation)$")
_SPLIT = re.compile("|".join([r"\n", _SPEAKERS] + [f"(?:{m.pattern})" for m in MARKUP]))


def fragments(text: str, min_chars: int = 8) -> list[str]:
    """The text between markup, speaker headings and line breaks: what a parser of this text keeps."""
    out = []
    for piece in _SPLIT.split(text):
        piece = (piece or "").strip()
        if len(piece) >= min_chars and not _ROLE_WORD.match(piece):
            out.append(piece)
    return out


def find_markup(text: str, role: str) -> list[tuple[Markup, str]]:
    """(entry, matched text) for each markup family found in one turn of `role`."""
    out: list[tuple[Markup, str]] = []
    if not text:
        return out
    for entry, rx, hints in _BY_ROLE.get(role, ()):
        for h in hints:  # a plain loop: this runs for every turn ingested
            if h in text:
                hit = rx.search(text)
                if hit:
                    out.append((entry, hit.group(0).strip()[:40]))
                break
    return out


__all__ = ["MARKUP", "Markup", "find_markup", "fragments"]
