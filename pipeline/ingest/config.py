"""The ingest stage's settings (light: the CLI reads them for its flags and --config without loading the stage)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from pipeline.stage import StageConfig

if TYPE_CHECKING:
    from adapters.spec import AdapterSpec


class IngestConfig(StageConfig):
    repo_id: str
    revision: str
    config: str
    split: str
    data_files: list[str]
    spec_hash: str
    records_hash: str  # what the shards' records depend on (AdapterSpec.records_hash): the resume key
    category: str
    mode: str
    max_conversation_chars: int = 4_000_000
    # Rows read per source = the plan's rows x this, so that enough survive dedup and the length filter.
    oversample: float = Field(3.0, ge=1.0)
    sample_seed: int = 0  # the seeded row-hash order the sample follows (pipeline/ingest/sample.py)

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
