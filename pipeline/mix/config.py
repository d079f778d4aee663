"""The mix stage's settings (light: the CLI reads them for its flags and --config without loading the stage)."""

from __future__ import annotations

import hashlib

from pydantic import Field

from pipeline.stage import StageConfig


class MixConfig(StageConfig):
    name: str
    plan_id: str | None
    samples: int | None = Field(None, ge=1)
    seed: int = 0
    category_weights: dict[str, float]
    source_category: dict[str, str]
    source_quotas: dict[str, int]
    threshold: float = Field(0.8, ge=0.05, le=0.98)
    min_prompt_tokens: int = 1
    max_prompt_tokens: int = 16_384
    length_unit: str

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]
