"""Strict configuration of `draftset regenerate`, validated at load and stored beside the outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from catalog.errors import DraftsetError
from pipeline.regenerate.sharding import Shard, parse_shard
from pipeline.stage import StageConfig, read_config_file


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


class RegenConfig(StageConfig):
    mix: str
    endpoints: list[str] = Field(min_length=1)
    model: str | None = None  # None: the first model the first endpoint lists at /v1/models
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable holding the key; the key itself is never stored
    partitions: list[Partition] = Field(default_factory=lambda: [p.model_copy() for p in DEFAULT_PARTITIONS])
    length_unit: Literal["chars", "tokens"] = "chars"
    tokenizer: str | None = None  # tokenizer.json of the target, required for length_unit="tokens"
    temperature: float = Field(default=0.7, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int | None = 0  # per-request seed = hash(seed, row id, turn): reproducible yet varied
    thinking: bool = True
    separate_reasoning: bool = True
    include_length_truncated: bool = False
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    max_rows: int | None = Field(default=None, gt=0)
    retry_errors: bool = False  # re-run ids listed in errors.jsonl instead of counting them as done
    flush_rows: int = Field(default=1000, gt=0)
    flush_seconds: float = Field(default=10.0, gt=0)
    connections_per_lane: int = Field(default=8, gt=0)  # see client.py: small pools scan fast
    shard: Shard | None = None  # this worker's share of the mix ("I/N" in files and on the CLI); None = all

    @field_validator("shard", mode="before")
    @classmethod
    def _parse_shard(cls, value: Any) -> Any:
        return parse_shard(value)

    @model_validator(mode="after")
    def _check(self) -> RegenConfig:
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


def load_config(path: Path | None, **overrides: Any) -> RegenConfig:
    """Config file (YAML, JSON or TOML) with CLI overrides on top; any problem is one clear DraftsetError."""
    data: dict = {}
    if path is not None:
        data = read_config_file(path)
        unknown = sorted(set(data) - set(RegenConfig.model_fields))
        if unknown:
            raise DraftsetError(
                f"{path}: unknown key {unknown[0]!r} (not a field of RegenConfig)",
                hint="see `draftset regenerate --help` for the fields and their defaults",
            )
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        # strict=False here only so YAML/JSON numbers coerce; the model's own types still hold.
        return RegenConfig.model_validate(data, strict=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise DraftsetError(
            f"invalid regenerate config{f' {path}' if path else ''}: {where}: {first['msg']}",
            hint="see `draftset regenerate --help` for the fields and their defaults",
        ) from exc


def with_overrides(
    config: RegenConfig,
    *,
    max_tokens: int | None = None,
    concurrency: int | None = None,
    split_at: int | None = None,
    **retry: float | int | None,
) -> RegenConfig:
    """CLI flags that apply to every partition (or the first threshold) and to the retry policy."""
    data = config.model_dump()
    for index, partition in enumerate(data["partitions"]):
        if max_tokens is not None:
            partition["max_tokens"] = max_tokens
        if concurrency is not None:
            partition["concurrency"] = concurrency
        if split_at is not None and index == 0 and partition["max_prompt"] is not None:
            partition["max_prompt"] = split_at
    data["retry"].update({k: v for k, v in retry.items() if v is not None})
    try:
        return RegenConfig.model_validate(data)
    except ValidationError as exc:
        raise DraftsetError(f"invalid regenerate options: {exc.errors()[0]['msg']}") from exc
