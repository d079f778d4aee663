"""What "the same prompt" means: the text that identifies a prompt, its normal form and its hash.

One definition, used by ingest (the `prompt_hash` column), dedup (exact and near) and mix, so the
three can never disagree about which rows are duplicates.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from adapters.records import Conversation

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def prompt_text(conv: Conversation) -> str:
    """The prompt's identity: its user turns. System prompts are left out on purpose: many
    datasets share one system prompt, which would make unrelated rows look alike."""
    return "\n".join(m.content for m in conv.messages if m.role == "user")


def context_text(conv: Conversation) -> str:
    """Everything the target reads before answering (system, user and tool turns): what the
    prompt-length filter measures."""
    return "\n".join(m.content for m in conv.messages if m.role != "assistant")


def response_text(conv: Conversation) -> str:
    """The assistant side (reasoning included): what the report's response lengths measure."""
    parts: list[str] = []
    for m in conv.messages:
        if m.role == "assistant":
            parts.extend(p for p in (m.reasoning, m.content) if p)
    return "\n".join(parts)


def normalize(text: str) -> str:
    """Unicode-fold, lower-case, drop punctuation and collapse whitespace: prompts that differ
    only in these count as exact duplicates."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NON_WORD.sub(" ", text).split())


def hash_normalized(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:32]


def prompt_hash(text: str) -> str:
    """sha256 of the normalized prompt text (32 hex chars)."""
    return hash_normalized(normalize(text))


def shingles(normalized: str, n: int = 2) -> set[bytes]:
    """Word n-grams of a normalized text (the whole text when it has fewer than n words)."""
    words = normalized.split()
    if len(words) < n:
        return {" ".join(words).encode()} if words else set()
    return {" ".join(words[i:i + n]).encode() for i in range(len(words) - n + 1)}
