"""The mix stage's settings (light: the CLI reads them for its flags and --config without loading the stage)."""

from __future__ import annotations

import hashlib

from pydantic import Field

from pipeline.stage import StageConfig

# The fields a person sets (flags, --config, the service's mix job); the rest the stage derives.
SETTABLE = ("plan_id", "samples", "seed", "threshold", "min_prompt_tokens", "max_prompt_tokens")


class MixConfig(StageConfig):
    name: str
    plan_id: str | None
    samples: int | None = Field(None, ge=1)
    seed: int = 0
    category_weights: dict[str, float]
    source_category: dict[str, str]
    source_quotas: dict[str, int]
    # datasets ingest held back (over their bad-row threshold): a mix made without them is another mix than
    # the one made once they pass, so a re-run after the fix is not taken for this one
    held_back: list[str] = Field(default_factory=list)
    threshold: float = Field(0.8, ge=0.05, le=0.98)
    min_prompt_tokens: int = 1
    max_prompt_tokens: int = 16_384
    length_unit: str

    def digest(self) -> str:
        # held_back only when set: the digest of a mix made before the field existed stays the same
        return hashlib.sha256(
            self.model_dump_json(exclude=None if self.held_back else {"held_back"}).encode()
        ).hexdigest()[:16]
