"""`draftset regenerate --json`: the run's counts as one JSON document on stdout (numbers, not text), the
progress and summary lines on stderr, against the fake OpenAI server over loopback."""

from __future__ import annotations

import json

from regen_helpers import simple_mix, write_mix
from typer.testing import CliRunner

from pipeline.cli.app import app


def test_regenerate_json_is_one_document_of_numbers(home, fake_server):
    server = fake_server(fail_marker="FAILME")
    write_mix(home, "m", simple_mix(6, marker_rows={4: " FAILME"}))
    args = ["regenerate", "m", "--endpoint", server.url, "--no-progress", "--max-attempts", "1", "--backoff", "0"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)  # nothing else on stdout
    (table,) = doc["tables"]
    assert table["title"] == "regenerate m" and all(isinstance(r["rows"], int) for r in table["rows"])
    assert doc["on_disk"] == {"results": 5, "errors": 1, "skipped": 0} and doc["input_rows"] == 6
    assert all(isinstance(v, int) for v in doc["counts"].values()) and doc["run_id"]
    assert "errors.jsonl" in res.stderr  # the next step still said, on stderr
