"""The dedup stage's settings (light: the CLI reads them for its flags and --config without loading the stage),
each declared once as a `setting` or `derived`."""

from __future__ import annotations

from typing import Any

from pipeline.stage import StageConfig
from pipeline.stage.config import derived, setting


# The settings dedup shares with mix (which runs it), declared once here.
def threshold_setting() -> Any:
    # datasketch's LSH needs at least two bands at 128 permutations: 0.98 is the highest it can do.
    return setting(0.8, "Near-duplicate Jaccard threshold (MinHash LSH).", ge=0.05, le=0.98)


def min_tokens_setting() -> Any:
    return setting(1, "Drop prompts shorter than this (too_short).", ge=0)


def max_tokens_setting() -> Any:
    return setting(16_384, "Drop prompts longer than this (too_long).", ge=1)


LENGTH_UNIT = '"tokenizer:<dir>" or "estimate:chars/4", resolved from --tokenizer before the run'


class DedupConfig(StageConfig):
    repos: list[str] = setting(..., "Sources to dedup together (default: all ingested).", flag="--repo")
    threshold: float = threshold_setting()
    num_perm: int = setting(128, "MinHash permutations per signature.")
    # Word bigrams: one changed word in a 30-word prompt still scores ~0.88.
    ngram: int = setting(2, "Words per shingle.")
    min_prompt_tokens: int = min_tokens_setting()
    max_prompt_tokens: int = max_tokens_setting()
    # Past it DuckDB spills to disk in the stage's folder.
    memory_limit_mb: int = setting(1_024, "DuckDB's working memory for the decision, in MB.", ge=64)
    length_unit: str = derived(why=LENGTH_UNIT)
