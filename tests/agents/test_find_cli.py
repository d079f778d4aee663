"""`draftset find` end to end through the CLI (typer runner) against the fixture Hub, plus its errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from catalog.errors import DraftsetError
from pipeline.cli import common
from pipeline.cli.app import app
from pipeline.servers.localhub import free_port

runner = CliRunner()


def test_find_json_output(hub_url, home):
    result = runner.invoke(app, ["find", "agentic coding", "--samples", "5000", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["summary"]["agents_ok"] == 10 and len(doc["agents"]) == 10
    assert doc["candidates"] and all(c["reasons"] for c in doc["candidates"])
    assert doc["plan"]["totals"]["samples_planned"] > 0
    assert any(q.startswith("draftset sql ") and doc["run_id"] in q for q in doc["review"])
    # the review queries really run on the read-only path
    sql = doc["review"][1].removeprefix("draftset sql ").strip('"')
    ok = runner.invoke(app, ["sql", sql, "--format", "json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)


def test_find_tables_headline_and_resume_of_finished_run(hub_url, home):
    result = runner.invoke(app, ["find", "agentic coding", "-n", "1000"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("candidates (ranked)", "this is ", "hours and", "draftset sql", "nebius-mini"):
        assert text in result.stdout
    run_id = json.loads(runner.invoke(app, ["sql", "SELECT run_id FROM search_runs", "-f", "json"]).stdout)[0]["run_id"]
    again = runner.invoke(app, ["find", "--resume", run_id])
    assert isinstance(again.exception, DraftsetError) and "already finished" in str(again.exception)


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["find", "agentic coding"], {"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}, "cannot reach the Hub"),
        (["find", "agentic coding", "--policy", "llm"], {"DRAFTSET_LLM_BASE_URL": ""}, "needs an OpenAI-compatible"),
        (["find", "--resume", "find-nope"], {}, "unknown find run 'find-nope' for --resume"),
        (["find"], {}, "no domain given"),
    ],
)
def test_find_errors_are_one_clear_line(hub_url, home, monkeypatch, args, env, message):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    common.settings.cache_clear()
    result = runner.invoke(app, args)
    assert isinstance(result.exception, DraftsetError), result.output
    assert message in str(result.exception) and result.exception.hint


def test_find_rejects_unknown_config_keys(hub_url, home, tmp_path):
    bad = tmp_path / "find.yaml"
    bad.write_text("share_cap: 0.2\nshare_kap: 0.3\n")
    result = runner.invoke(app, ["find", "agentic coding", "--config", str(bad)])
    assert isinstance(result.exception, DraftsetError) and "share_kap" in str(result.exception)
