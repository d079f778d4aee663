"""The ingest stage's settings (light: the CLI reads them for its flags and --config without loading the stage),
each declared once as a `setting` (flag, --config key, service setting) or `derived` (from the approved spec)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.stage import StageConfig
from pipeline.stage.config import derived, settable_fields, setting

if TYPE_CHECKING:
    from adapters.spec import AdapterSpec


SPEC = "the approved adapter spec's source (IngestConfig.for_spec)"


class IngestConfig(StageConfig):
    repo_id: str = derived(why=SPEC)
    revision: str = derived(why=SPEC)
    config: str = derived(why=SPEC)
    split: str = derived(why=SPEC)
    data_files: list[str] = derived(why=SPEC)
    spec_hash: str = derived(why=SPEC)
    # What the shards' records depend on (AdapterSpec.records_hash): the resume key.
    records_hash: str = derived(why=SPEC)
    category: str = derived(why=SPEC)
    mode: str = derived(why=SPEC)
    max_conversation_chars: int = setting(4_000_000, "Quarantine conversations longer than this (too_large).", ge=1)
    # Enough rows to survive dedup and the length filter.
    oversample: float = setting(3.0, "With --plan: rows read per source = its quota x this.", ge=1.0)
    sample_seed: int = setting(0, "With --plan: the seed of the row-hash order the sample follows.")

    @classmethod
    def for_spec(cls, spec: AdapterSpec, **settings: int) -> IngestConfig:
        """The config of ingesting `spec`'s source as the spec says (the gate approved this spec and revision)."""
        src = spec.source
        return cls(
            repo_id=src.repo_id,
            revision=src.revision,
            config=src.config,
            split=src.split,
            data_files=list(src.data_files),
            spec_hash=spec.spec_hash(),
            records_hash=spec.records_hash(),
            category=spec.category,
            mode=spec.mode,
            **settings,
        )


# The fields a person sets (flags, --config, the service's ingest API), as IngestConfig declares them.
SETTABLE = tuple(settable_fields(IngestConfig))
