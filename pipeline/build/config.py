"""The build stage's settings (light: the CLI reads them for its flags and --config without loading the stage),
each declared once as a `setting` or `derived`."""

from __future__ import annotations

from pipeline.stage import StageConfig
from pipeline.stage.config import derived, settable_fields, setting

# Settings that only shape what is computed over all shards at the end: changing them needs no rebuild.
RECOMPUTED_AT_END = {"draft_vocab_size", "rows_per_shard"}


# The fields a person sets (flags, --config, the service's build job); `thinking` unset is inherited.
class BuildConfig(StageConfig):
    mix: str = derived(why="the command's MIX argument")
    model_dir: str = derived(why="--model, the serving target")
    chat_template_sha256: str = derived(why="the target's chat template, hashed by the stage")
    source: str = derived(why="the directory the conversations were read from (--from)")
    max_length: int = setting(2048, "Truncate rows to this many tokens.", ge=16)
    per_turn: bool = setting(
        True,
        "One row per assistant turn, or every assistant turn trained in one row (default: per turn).",
        flag="--per-turn-rows/--all-turns-one-row",
    )
    draft_vocab_size: int = setting(32000, "K: draft vocabulary size.", ge=1)
    # Injected only into conversations that have no system turn.
    system_prompt: str | None = setting(
        None, "Inject this system prompt where a conversation has none (must match serving)."
    )
    thinking: bool = setting(
        True,
        "Template thinking mode (default: the mode regeneration used, else on).",
        flag="--thinking/--no-thinking",
        inherited=True,
    )
    keep_past_reasoning: bool = setting(
        False,
        "Per-turn rows: keep earlier answers' reasoning in the context "
        "(default: dropped, as regeneration and serving clients do).",
    )
    end_of_turn: str = setting("<|im_end|>", "The template's end-of-turn token.")
    rows_per_shard: int = setting(2000, "Rows per output shard.", ge=1)


# What a person may set (the CLI, --config and the service read it): derived from the declarations.
SETTABLE = tuple(settable_fields(BuildConfig))
