"""What "the same prompt" means: the text that identifies a prompt, its normal form and its hash.

One definition, used by ingest (the `prompt_hash` column), dedup (exact and near) and mix, so the
three can never disagree about which rows are duplicates. The text itself is `Conversation.prompt_text()`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


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
    return {" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)}
