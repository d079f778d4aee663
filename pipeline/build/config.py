"""The build stage's settings (light: the CLI reads them for its flags and --config without loading the stage)."""

from __future__ import annotations

from pydantic import Field

from pipeline.stage import StageConfig

# Settings that only shape what is computed over all shards at the end: changing them needs no rebuild.
RECOMPUTED_AT_END = {"draft_vocab_size", "rows_per_shard"}


# The fields a person sets (flags, --config, the service's build job); `thinking` unset is inherited.
SETTABLE = (
    "max_length",
    "per_turn",
    "draft_vocab_size",
    "system_prompt",
    "thinking",
    "keep_past_reasoning",
    "end_of_turn",
    "rows_per_shard",
)


class BuildConfig(StageConfig):
    mix: str
    model_dir: str
    chat_template_sha256: str
    source: str  # the directory the conversations were read from
    max_length: int = Field(2048, ge=16)
    per_turn: bool = True
    draft_vocab_size: int = Field(32000, ge=1)
    system_prompt: str | None = None  # injected only into conversations that have no system turn
    thinking: bool = True
    keep_past_reasoning: bool = False  # per-turn rows: earlier answers' reasoning stays in the context
    end_of_turn: str = "<|im_end|>"
    rows_per_shard: int = Field(2000, ge=1)
