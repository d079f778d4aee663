"""`draftset find` end to end through the CLI (typer runner) against the fixture Hub, plus its errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agents.categories import CATEGORIES
from catalog.errors import DraftsetError
from pipeline.cli import common
from pipeline.cli.app import app
from pipeline.servers.localhub import free_port

N_AGENTS = len(CATEGORIES)  # one search agent per category brief

runner = CliRunner()


def test_find_json_output(hub_url, home):
    result = runner.invoke(app, ["find", "agentic coding", "--samples", "5000", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["summary"]["agents_ok"] == N_AGENTS and len(doc["agents"]) == N_AGENTS
    assert doc["candidates"] and all(c["reasons"] for c in doc["candidates"])
    assert doc["plan"]["totals"]["samples_planned"] > 0
    assert any(q.startswith("draftset sql ") and doc["run_id"] in q for q in doc["review"])
    # the review queries really run on the read-only path
    sql = doc["review"][1].removeprefix("draftset sql ").strip('"')
    ok = runner.invoke(app, ["sql", sql, "--format", "json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)


def test_find_tables_headline_and_resume_of_finished_run(hub_url, home):
    result = runner.invoke(app, ["find", "agentic coding", "-n", "1000", "--verbose"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("candidates (ranked)", "this is ", "hours and", "draftset sql", "nebius-mini"):
        assert text in result.stdout
    run_id = json.loads(runner.invoke(app, ["sql", "SELECT run_id FROM search_runs", "-f", "json"]).stdout)[0]["run_id"]
    again = runner.invoke(app, ["find", "--resume", run_id])
    assert isinstance(again.exception, DraftsetError) and "already finished" in str(again.exception)


def test_find_default_is_the_plan_and_next_steps(hub_url, home, monkeypatch):
    """Snapshot of the compact default at 80 columns and piped: the plan, its totals and what to do next; every
    agent's tables only under --verbose."""
    outputs = {}
    for label, env in (("80", {"COLUMNS": "80"}), ("piped", {})):
        if not env:
            monkeypatch.delenv("COLUMNS", raising=False)
        monkeypatch.setattr(common.console, "_width", int(env.get("COLUMNS", 240)))
        res = runner.invoke(app, ["find", "agentic coding", "-n", "1000", "--propose", "0"], env=env)
        assert res.exit_code == 0, res.output
        outputs[label] = res.stdout.splitlines()
    for lines in outputs.values():
        text = "\n".join(lines)
        assert "candidates (ranked)" not in text and "relevance" not in text.split("plan ")[0]
        assert "plan plan-" in text or text.count("plan ") >= 1
        assert "this is " in text and "hours and" in text and "next: draftset adapters list" in text
        assert "--verbose shows them" in text
        width = 80 if lines is outputs["80"] else 240
        assert all(len(x) <= width for x in lines if not x.startswith("forecast: "))  # one sentence, soft-wrapped
    verbose = runner.invoke(
        app, ["find", "agentic coding", "-n", "1000", "--propose", "0", "-v"], env={"COLUMNS": "80"}
    )
    assert verbose.exit_code == 0 and "candidates (ranked)" in verbose.stdout and "draftset sql" in verbose.stdout
    # The compact default is a screenful (at 80 columns a long repo id breaks after its owner, two lines a
    # dataset, so that each dataset's cost stays beside it); --verbose is every agent's table.
    assert len(outputs["80"]) <= 66 < len(verbose.stdout.splitlines())
    print("find lines at 80 columns: default", len(outputs["80"]), "verbose", len(verbose.stdout.splitlines()))


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
