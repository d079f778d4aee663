"""Run the real `draftset` CLI in a subprocess, from the repo root (imported as `tests.kits.cli`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # pyproject's `pythonpath = ["."]` keeps the real packages first


def run_draftset(*args: str, env: Mapping[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`draftset ARGS...` with `env`; stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", *args],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
