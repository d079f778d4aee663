"""The ingest stage's settings (light: the CLI reads them for its flags and --config without loading the stage)."""

from __future__ import annotations

from pipeline.stage import StageConfig


class IngestConfig(StageConfig):
    repo_id: str
    revision: str
    config: str
    split: str
    data_files: list[str]
    spec_hash: str
    category: str
    mode: str
    max_conversation_chars: int = 4_000_000
