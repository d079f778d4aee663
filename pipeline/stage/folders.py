"""Where a stage's files lie: rank folders under torchrun, manifest.json and config.json, the staged swap."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from catalog.errors import DraftsetError

MANIFEST = "manifest.json"
CONFIG = "config.json"


def torchrun_rank() -> tuple[int, int]:
    """(rank, world_size) as torchrun sets them; (0, 1) outside torchrun. Starts no process group."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def rank_dir(base: Path, rank: int, world: int) -> Path:
    """Where a rank writes under torchrun: one `rank<k>` folder per rank; the folder itself when alone."""
    return base if world == 1 else base / f"rank{rank}"


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """What the stage that wrote `folder` recorded: its manifest.json, None when it has none."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise DraftsetError(f"{path} is not valid JSON: {exc}", hint="re-run the stage that wrote it") from exc
    return data if isinstance(data, dict) else None


def recorded_compat(path: Path) -> dict[str, Any]:
    """The settings a run recorded in its config.json: its `compat` (what resuming must match), else all."""
    data = json.loads(Path(path).read_text())
    compat = data.get("compat") if isinstance(data, dict) else None
    return compat if isinstance(compat, dict) else data


def swap_into_place(staging: Path, final: Path) -> None:
    """Replace `final` by the finished staging folder (two renames, never a half output)."""
    old = final.parent / f".{final.name}.old-{uuid.uuid4().hex[:8]}"
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
