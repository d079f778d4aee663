"""Helpers for the catalog tests: run the real CLI and a second process in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kits.cli import run_draftset

ROOT = Path(__file__).resolve().parents[2]  # pyproject's `pythonpath = ["."]` keeps the real `catalog` first

# A writer that holds the catalog's write lock until its stdin closes, then commits one row.
HOLDER = """
import sys
from catalog.db import Catalog, upsert
with Catalog(sys.argv[1]).writer() as con:
    upsert(con, "stage_runs", [{"run_id": "held", "stage": "holder", "status": "ok"}])
    print("held", flush=True)
    sys.stdin.read()
print("released", flush=True)
"""


@pytest.fixture()
def draftset(home):
    """Run `draftset ARGS...` in a subprocess against the test's DRAFTSET_HOME."""

    def run(*args: str) -> subprocess.CompletedProcess:
        return run_draftset(*args, env={**os.environ, "DRAFTSET_HOME": str(home), "COLUMNS": "200"})

    return run


@pytest.fixture()
def held_writer(home):
    """A second process holding `Catalog.writer()` open; yields it, then lets it commit and exit."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "held", proc.stderr.read()
        yield proc
    finally:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=30)
