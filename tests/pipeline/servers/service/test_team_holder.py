"""`draftset status` and the busy error name the real holder of the catalog when it is not the service: the
pid and the command line of the process holding DuckDB's lock (the service's case: test_service_cli.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from catalog import Catalog
from catalog.errors import CatalogBusy

# A process holding the catalog as a stage does while it writes; its argv reads as a draftset command whose URL
# carries a credential, which is never shown.
SECRET = "hf_secret0123456789abcdefghij"
SHOWN = "draftset ingest --repo lab/x --endpoint http://u:***@hub"
HOLD = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"


@pytest.fixture()
def held(home):
    Catalog(home).migrate()
    argv = [sys.executable, "-c", HOLD, str(home / "catalog.duckdb"), "pipeline.cli.app", "ingest", "--repo", "lab/x"]
    argv += ["--endpoint", f"http://u:{SECRET}@hub"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc.pid
    proc.kill()
    proc.wait(timeout=10)


def test_busy_error_and_status_name_the_pid_and_command(held, home, draftset, monkeypatch):
    with pytest.raises(CatalogBusy) as busy:
        Catalog(home, busy_timeout_s=0.1).query("SELECT 1")
    assert str(busy.value) == f"catalog is busy: pid {held} ({SHOWN}) is using {home}/catalog.duckdb"
    assert SECRET not in str(busy.value)
    assert "draftset status names the holder" in busy.value.hint

    monkeypatch.setattr(Catalog.__init__, "__defaults__", (0.1,))  # status waits for a writer; not 5 s here
    done = draftset("status")
    assert done.returncode == 0, done.stderr
    assert f"catalog busy: pid {held} ({SHOWN}) is writing it" in done.stdout
    assert "export" not in done.stdout  # nothing to export: no service holds it
    as_json = draftset("status", "--json")
    assert json.loads(as_json.stdout)["catalog_holder"] == {"kind": "process", "pid": held, "command": SHOWN}
    assert SECRET not in done.stdout + done.stderr + as_json.stdout + as_json.stderr
