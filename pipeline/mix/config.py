"""The mix stage's settings (light: the CLI reads them for its flags and --config without loading the stage),
each declared once as a `setting` or `derived`."""

from __future__ import annotations

import hashlib

from pydantic import Field

from pipeline.dedup.config import LENGTH_UNIT, max_tokens_setting, min_tokens_setting, threshold_setting
from pipeline.stage import StageConfig
from pipeline.stage.config import derived, settable_fields, setting

FROM_PLAN = "the plan's quotas (or --weight), read by the stage"


# The fields a person sets (flags, --config, the service's mix job); the rest the stage derives.
class MixConfig(StageConfig):
    name: str = derived(why="the command's NAME argument")
    plan_id: str | None = setting(..., "Plan whose per-source quotas to take (default: latest).", flag="--plan")
    samples: int | None = setting(None, "Records in the mix (default: the plan's).", ge=1)
    seed: int = setting(0, "Selection seed: same inputs + seed = same mix.")
    category_weights: dict[str, float] = derived(why=FROM_PLAN)
    source_category: dict[str, str] = derived(why=FROM_PLAN)
    source_quotas: dict[str, int] = derived(why=FROM_PLAN)
    # datasets ingest held back (over their bad-row threshold): a mix made without them is another mix than
    # the one made once they pass, so a re-run after the fix is not taken for this one
    held_back: list[str] = Field(
        default_factory=list, description="what ingest holds back", json_schema_extra={"settable": False}
    )
    threshold: float = threshold_setting()
    min_prompt_tokens: int = min_tokens_setting()
    max_prompt_tokens: int = max_tokens_setting()
    length_unit: str = derived(why=LENGTH_UNIT)

    def digest(self) -> str:
        # held_back only when set: the digest of a mix made before the field existed stays the same
        return hashlib.sha256(
            self.model_dump_json(exclude=None if self.held_back else {"held_back"}).encode()
        ).hexdigest()[:16]


# What a person may set (the CLI, --config and the service read it): derived from the declarations.
SETTABLE = tuple(settable_fields(MixConfig))
