"""Strict configuration of `draftset regenerate`, validated at load and stored beside the outputs.

Each setting is declared once, on `RegenConfig` (`setting`/`derived`, pipeline/stage/config.py): the CLI, `python -m
pipeline.regenerate`, --config files and the service build their options from it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from catalog.errors import DraftsetError
from pipeline.regenerate.sharding import Shard, parse_shard
from pipeline.stage import StageConfig, stage_settings
from pipeline.stage.config import derived, setting


class Partition(StageConfig):
    """Prompts up to `max_prompt` (in the config's `length_unit`; None = no limit) share one concurrency.

    Concurrency is per endpoint (like SpecForge's --concurrency per server): n endpoints run n times as
    many requests. Long agent trajectories need fewer in flight, or the server runs out of KV cache.
    """

    name: str
    max_prompt: int | None = Field(default=None, gt=0)
    concurrency: int = Field(gt=0, le=4096)
    max_tokens: int = Field(gt=0)


# Field defaults (83,288 Kimi-K2.5 prompts): short prompts 150 concurrent / 10,240 tokens, long SWE-agent
# trajectories 32 / 16,384. The threshold (~8K tokens at ~4 chars/token) is where trajectories start.
DEFAULT_PARTITIONS = [
    Partition(name="short", max_prompt=32_000, concurrency=150, max_tokens=10_240),
    Partition(name="long", max_prompt=None, concurrency=32, max_tokens=16_384),
]


class RetryPolicy(StageConfig):
    """Exponential backoff with jitter on 408/409/425/429/5xx, timeouts and connection errors."""

    max_attempts: int = Field(default=5, ge=1, le=50)
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)
    timeout_s: float = Field(default=1800.0, gt=0)  # 16K tokens at ~10 tok/s per stream under load
    # The longest Retry-After / RateLimit-Reset a server may ask for before we retry anyway.
    retry_after_max_s: float = Field(default=300.0, ge=0)


# `--shard I/N` (and "I/N" in a file or a request): parsed wherever the value is checked, so a single setting
# checked alone (pipeline/stage/config.py `check_value`) reads it as the whole model does.
ShardSpec = Annotated[Shard | None, BeforeValidator(parse_shard)]


class RegenConfig(StageConfig):
    """Every setting of a regeneration, declared once: `draftset regenerate`'s flags, `python -m
    pipeline.regenerate`'s, the --config keys and the service's settings are built from these fields."""

    mix: str = derived(why="the command's MIX argument")
    endpoints: list[str] = setting(
        ...,
        "OpenAI-compatible server URL (repeatable)",
        flag="--endpoint",
        env="DRAFTSET_TARGET_ENDPOINTS",
        min_length=1,
    )
    model: str | None = setting(
        None, "Served model name; left out, what /v1/models lists first", env="DRAFTSET_TARGET_MODEL"
    )
    api_key_env: str = setting(
        "OPENAI_API_KEY", "Name of the variable holding the endpoints' key (the key itself is never stored)."
    )
    partitions: list[Partition] = setting(
        help="Prompt-length partitions, each with its concurrency and max_tokens (a --config key: a list of "
        "{name, max_prompt, concurrency, max_tokens}, the last with max_prompt null).",
        default_factory=lambda: [p.model_copy() for p in DEFAULT_PARTITIONS],
        file_only=True,
    )
    length_unit: Literal["chars", "tokens"] = setting("chars", "Unit of the partitions' max_prompt.")
    tokenizer: str | None = setting(None, "The target's tokenizer.json, needed for --length-unit tokens.")
    temperature: float = setting(0.7, "Sampling temperature.", ge=0)
    top_p: float = setting(1.0, "Nucleus sampling top_p.", gt=0, le=1)
    seed: int | None = setting(0, "Base seed; each request gets hash(seed, id, turn): reproducible yet varied.")
    thinking: bool = setting(
        True, "enable_thinking in chat_template_kwargs (default: on).", flag="--thinking/--no-thinking"
    )
    separate_reasoning: bool = setting(
        True,
        "Ask the server for the reasoning apart from the answer (default: on).",
        flag="--separate-reasoning/--no-separate-reasoning",
    )
    include_length_truncated: bool = setting(False, "Keep answers cut by max_tokens (default: skipped.jsonl).")
    retry: RetryPolicy = setting(
        help="Retry policy (a --config key: {max_attempts, backoff_s, backoff_max_s, timeout_s, "
        "retry_after_max_s}); --max-attempts, --timeout and --backoff set its parts.",
        default_factory=RetryPolicy,
        file_only=True,
    )
    max_rows: int | None = setting(None, "Only the first N rows of the mix.", gt=0)
    retry_errors: bool = setting(False, "Answer again the ids in errors.jsonl instead of counting them as done.")
    flush_rows: int = setting(1000, "Rows per result shard.", gt=0)
    flush_seconds: float = setting(10.0, "Seconds between result flushes.", gt=0)
    connections_per_lane: int = setting(8, "HTTP connections per lane (client.py: small pools scan fast).", gt=0)
    shard: ShardSpec = setting(
        None,
        "Take only rows with sha1(id) mod N == I (0 <= I < N), writing data/regen/MIX/shard-I-of-N/: N workers "
        "(processes or hosts on a shared filesystem) split one mix and each resumes on its own. Every run on a "
        "mix must use the same N.",
        metavar="I/N",
    )
    # Shorthands for parts of `partitions` and `retry` (left out: theirs). Folded in by `_check`, kept as given.
    max_tokens: int | None = setting(
        None, "max_tokens for every partition (default: short 10,240 / long 16,384).", gt=0
    )
    concurrency: int | None = setting(
        None, "Concurrency per endpoint for every partition (default: short 150 / long 32).", gt=0, le=4096
    )
    split_at: int | None = setting(None, "Short/long prompt threshold (default: 32,000 chars).", gt=0)
    max_attempts: int | None = setting(
        None, f"Attempts per request (default: {RetryPolicy().max_attempts}).", ge=1, le=50
    )
    timeout: float | None = setting(
        None,
        "Seconds per request: a wall-clock deadline for the whole reply (a trickling server cannot stretch it) "
        f"(default: {RetryPolicy().timeout_s:g}).",
        gt=0,
    )
    backoff: float | None = setting(
        None, f"First retry delay in s, doubling (default: {RetryPolicy().backoff_s:g}).", ge=0
    )

    @model_validator(mode="after")
    def _check(self) -> RegenConfig:
        self._fold_shorthands()
        names = [p.name for p in self.partitions]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"partition names must be unique and non-empty, got {names}")
        limits = [p.max_prompt for p in self.partitions]
        bounded = [x for x in limits[:-1] if x is not None]
        if limits[-1] is not None or len(bounded) != len(limits) - 1 or bounded != sorted(bounded):
            raise ValueError("partitions must be ordered by max_prompt, the last with max_prompt=null (no limit)")
        if self.length_unit == "tokens" and not self.tokenizer:
            raise ValueError("length_unit='tokens' needs `tokenizer` (path to the target's tokenizer.json)")
        return self

    def _fold_shorthands(self) -> None:
        """--max-tokens/--concurrency set every partition, --split-at the first threshold; --max-attempts,
        --timeout, --backoff the retry policy. Idempotent, so a stored config validates to itself."""
        every = {k: v for k, v in {"max_tokens": self.max_tokens, "concurrency": self.concurrency}.items() if v}
        partitions = []
        for index, partition in enumerate(self.partitions):
            update = dict(every)
            if self.split_at is not None and index == 0 and partition.max_prompt is not None:
                update["max_prompt"] = self.split_at
            partitions.append(Partition.model_validate({**partition.model_dump(), **update}) if update else partition)
        self.partitions = partitions
        retry = {"max_attempts": self.max_attempts, "timeout_s": self.timeout, "backoff_s": self.backoff}
        retry = {k: v for k, v in retry.items() if v is not None}
        if retry:
            self.retry = RetryPolicy.model_validate({**self.retry.model_dump(), **retry})

    def partition_for(self, prompt_length: int) -> Partition:
        for partition in self.partitions:
            if partition.max_prompt is None or prompt_length <= partition.max_prompt:
                return partition
        raise AssertionError("the last partition has no limit")  # guaranteed by _check

    def sampling(self) -> dict:
        """The generation settings stored with every row (and compared on resume)."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "thinking": self.thinking,
            "separate_reasoning": self.separate_reasoning,
            "max_tokens": {p.name: p.max_tokens for p in self.partitions},
        }


def load_config(path: Path | None, *, mix: str, env: Mapping[str, Any] | None = None, **flags: Any) -> RegenConfig:
    """The regeneration's config: model defaults < `env` (`env_values` of the settings) < the --config file
    `path` < the flags given (not None); any problem, a derived key in the file included, is one DraftsetError."""
    values = stage_settings(RegenConfig, path, flags, env=env)
    if not values.get("endpoints"):  # the one required setting: say where it can come from
        raise DraftsetError(
            "no target endpoint given",
            hint="pass --endpoint http://HOST:PORT (e.g. from `draftset serve-dev DIR --port 8000`), put "
            "`endpoints:` in the --config file, or set DRAFTSET_TARGET_ENDPOINTS='[\"http://HOST:PORT\"]'",
        )
    try:
        return RegenConfig.model_validate({"mix": mix, **values})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise DraftsetError(
            f"invalid regenerate config{f' {path}' if path else ''}: {where}: {first['msg']}",
            hint="see `draftset regenerate --help` for the settings and their defaults",
        ) from None
