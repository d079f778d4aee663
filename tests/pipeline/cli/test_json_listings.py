"""`--json` on every listing command: one JSON document on stdout with the same data as the tables, and
every other line on stderr (so `| jq` always parses)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.cli.app import app
from tests.pipeline.test_mix import SOURCES, _ingest, _plan


def _json(*args: str) -> dict:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # the whole of stdout is one document: nothing else was printed there


def test_mix_status_and_sql_list_as_json(home, sources):
    _ingest(home, sources, SOURCES)
    _plan(home)
    doc = _json("mix", "j", "--json")
    (table,) = doc["tables"]
    rows = {r["source"]: r for r in table["rows"]}
    assert table["title"] == "mix j" and rows["never/ingested"] | {"ingested": 0, "dedup dropped": 0} == {
        "source": "never/ingested",
        "category": "coding",
        "ingested": 0,
        "dedup dropped": 0,
        "quota": 5,
        "target": 4,
        "selected": 0,
        "short": 4,
        "received": "-",
    }
    figures = doc["figures"]
    assert (figures["target"], figures["selected"], figures["passed_on"], figures["unmet"]) == (40, 40, 4, 0)
    assert sum(r["selected"] for r in rows.values()) == figures["selected"]
    assert figures["summary"].startswith("plan quotas 55 scaled to target 40")

    status = _json("status", "--json")
    runs = next(t for t in status["tables"] if t["title"] == "recent stage runs")["rows"]
    assert [r["stage"] for r in runs][:2] == ["mix", "dedup"] and all(r["status"] == "ok" for r in runs[:2])

    res = CliRunner().invoke(app, ["sql", "SELECT stage, status FROM stage_runs ORDER BY stage", "--json"])
    assert res.exit_code == 0, res.output
    assert [r["stage"] for r in json.loads(res.stdout)] == ["dedup", "mix"]


def test_adapters_list_as_json(fixture_home, monkeypatch):
    from pipeline.settings import settings

    home, _ = fixture_home
    monkeypatch.setenv("DRAFTSET_HOME", str(home))
    settings.cache_clear()
    doc = _json("adapters", "list", "--json")
    (table,) = doc["tables"]
    assert table["columns"][:3] == ["repo", "verdict", "status"]
    rows = table["rows"]
    assert len(rows) >= 20 and all(set(r) == set(table["columns"]) for r in rows)
    assert {r["verdict"] for r in rows} <= {"pass", "pass with warnings", "FAIL", "REFUSED", "not run (old spec)"}
    text = " ".join(CliRunner().invoke(app, ["adapters", "list"], env={"COLUMNS": "240"}).output.split())
    for row in rows:  # the same data as the table
        assert row["repo"] in text and str(row["status"]) in text
