"""The stage: one idea every step of the pipeline (ingest, dedup, mix, regenerate, build, capture, train) stands on.

- config.py: `StageConfig` (strict: an unknown key or a wrong type fails at load) and its values from
  `--config FILE` under the flags given, for Typer and for the `python -m pipeline.<stage>` entry points;
- run.py: `StageRun`, one run's accounting (in/out/dropped-by-reason, quarantine with where and why,
  config.json/stats.json, the `stage_runs` row, `ZeroOutput` when non-empty input gave nothing);
- base.py: `Stage` and `AsyncStage`, the unit of work (output folder, resume by id, the compatibility check,
  staging, the manifest that forwards its inputs');
- folders.py: where a stage's files lie (torchrun rank folders, manifest.json, config.json).

Import the names from here: `from pipeline.stage import Stage, StageConfig, StageRun`.
"""

from pipeline.stage.base import AsyncStage, Stage, StageResult
from pipeline.stage.config import (
    StageConfig,
    add_field_arguments,
    field_default,
    parsed_settings,
    read_config_file,
    stage_settings,
)
from pipeline.stage.folders import CONFIG, MANIFEST, rank_dir, read_manifest, recorded_compat, torchrun_rank
from pipeline.stage.run import StageRun, require, skipped_total, watch_runs

__all__ = [
    "CONFIG",
    "MANIFEST",
    "AsyncStage",
    "Stage",
    "StageConfig",
    "StageResult",
    "StageRun",
    "add_field_arguments",
    "field_default",
    "parsed_settings",
    "rank_dir",
    "read_config_file",
    "read_manifest",
    "recorded_compat",
    "require",
    "skipped_total",
    "stage_settings",
    "torchrun_rank",
    "watch_runs",
]
