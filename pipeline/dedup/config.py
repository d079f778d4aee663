"""The dedup stage's settings (light: the CLI reads them for its flags and --config without loading the stage)."""

from __future__ import annotations

from pydantic import Field

from pipeline.stage import StageConfig


class DedupConfig(StageConfig):
    repos: list[str]
    # datasketch's LSH needs at least two bands at 128 permutations: 0.98 is the highest it can do.
    threshold: float = Field(0.8, ge=0.05, le=0.98)
    num_perm: int = 128
    ngram: int = 2  # word bigrams: one changed word in a 30-word prompt still scores ~0.88
    min_prompt_tokens: int = 1
    max_prompt_tokens: int = 16_384
    # DuckDB's working memory for the decision; past it DuckDB spills to disk in the stage's folder.
    memory_limit_mb: int = Field(1_024, ge=64)
    length_unit: str  # "tokenizer:<dir>" or "estimate:chars/4", resolved before the run
