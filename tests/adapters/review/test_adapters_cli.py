"""`draftset adapters ...` end to end on the fixture Hub: propose → test → map → approve → edit → gate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.prove.contract import run_contract
from adapters.review import store
from adapters.review.gate import require_approved
from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.cli.app import app
from tests.kits.adapters import make_spec, raw

WEIRD = "weird-roles/customer-support-chats"


def _run(*args: str, ok: bool = True):
    result = CliRunner().invoke(app, ["adapters", *args], env={"COLUMNS": "200"})
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_review_flow_unmappable_label_then_mapped_approved_and_edited(hub_url, home, tmp_path, monkeypatch):
    proposed = _run("propose", WEIRD, ok=False)
    out = proposed.output
    assert proposed.exit_code == 1 and WEIRD in out and "FAIL" in out  # a failing contract stops a script
    assert "1 dataset(s): 0 contract pass, 1 contract FAIL" in out

    failed = _run("test", WEIRD, ok=False)
    assert failed.exit_code == 1 and "'supervisor_note' (7 turns)" in failed.output
    contract = Catalog(home).query("SELECT contract FROM adapters WHERE repo_id = ?", [WEIRD])[0]["contract"]
    assert '"passed": false' in contract

    refused = _run("approve", WEIRD, "--by", "alice", ok=False)
    assert isinstance(refused.exception, DraftsetError) and "contract of" in str(refused.exception)
    with pytest.raises(DraftsetError, match="not approved"):
        require_approved(Catalog(home), WEIRD)

    assert "'supervisor_note': 'drop'" in _run("map", WEIRD, "supervisor_note=drop", "--by", "alice").output
    tested = _run("test", WEIRD).output
    assert f"contract of {WEIRD}: pass" in tested
    assert "approval: blocked: 1 REVIEW" in tested and "REVIEW open: category" in tested  # a pass that is blocked
    shown = _run("approve", WEIRD, "--by", "alice", "--note", "notes are internal", ok=False)
    assert "open REVIEW item(s): category" in str(shown.exception)  # no find ran: the category is a guess
    assert "approved" in _run("approve", WEIRD, "--by", "alice", "--note", "ok", "--checked", "category").output
    spec = require_approved(Catalog(home), WEIRD)
    assert spec.role_map["supervisor_note"] == "drop"
    _run("propose", WEIRD)  # re-proposing keeps the person's mapping, so the approval still holds
    assert require_approved(Catalog(home), WEIRD) == spec

    shown = _run("show", WEIRD).output
    for part in (
        "status approved",
        "why each field was chosen",
        "role labels in the sample",
        "supervisor_note",
        "raw row",
        "canonical record",
        "contract of",
        "golden rows: 3 (below)",
    ):
        assert part in shown
    assert "reasons: {}" not in shown and "golden: []" not in shown  # the YAML never claims they are empty
    preview = _run("preview", WEIRD, "--row", "4", "--canonical-only").output
    assert '"role": "user"' in preview and "supervisor_note" not in preview  # dropped on purpose, by the map
    turns = _run("preview", WEIRD, "--row", "4").output
    assert "row 4 under spec" in turns and "│ messages[3] │ agent" in turns and "│ cut " in turns
    assert "1 raw turn(s) not in the record: 1 × after the regenerate cut" in turns  # said, not silently gone
    missing = _run("preview", WEIRD, "--row", "100000", ok=False)
    assert isinstance(missing.exception, DraftsetError) and "has no row 100000" in str(missing.exception)
    assert "approved" in _run("list").output
    assert ": pass" in _run("test", "--all", "--rows", "20").output  # the CI form over every adapter

    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('cut: last_user', 'cut: first_user'))\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    assert "status stale" in _run("edit", WEIRD).output
    with pytest.raises(DraftsetError, match="stale"):
        require_approved(Catalog(home), WEIRD)
    assert store.require(Catalog(home), WEIRD).spec.cut == "first_user"


def test_edit_with_invalid_yaml_keeps_the_edits_and_says_so(hub_url, home, tmp_path, monkeypatch):
    _run("propose", "gsm-mini/gsm8k-style")
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text('layout: sideways\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    result = _run("edit", "gsm-mini/gsm8k-style", ok=False)
    assert isinstance(result.exception, DraftsetError) and "invalid" in str(result.exception)
    assert "your edits are kept" in result.exception.hint
    assert store.yaml_path(home, "gsm-mini/gsm8k-style").read_text() == "layout: sideways\n"


def test_propose_all_top_uses_the_find_ranking(hub_url, home):
    with Catalog(home).writer() as con:
        con.executemany(
            "INSERT INTO candidates (repo_id, category, score, status) VALUES (?, ?, ?, ?)",
            [
                ["gsm-mini/gsm8k-style", "reasoning", 0.9, "relevant"],
                ["math-mini/competition-math", "reasoning", 0.8, "relevant"],
                ["vision-mini/image-captions", "chat", 0.95, "irrelevant"],
                ["debug-mini/bugfix-conversations", "review", 0.1, "relevant"],
            ],
        )
    out = _run("propose", "--all-top", "2", "--rows", "50").output
    assert "gsm-mini/gsm8k-style" in out and "math-mini/competition-math" in out and "image-captions" not in out
    records = {r.repo_id: r for r in store.list_all(Catalog(home))}
    assert set(records) == {"gsm-mini/gsm8k-style", "math-mini/competition-math"}
    assert records["gsm-mini/gsm8k-style"].spec.category == "reasoning"
    assert "from the find ranking" in records["gsm-mini/gsm8k-style"].spec.reasons["category"]


def test_cli_errors_are_one_line_with_the_next_command(tmp_path):
    env = {**os.environ, "DRAFTSET_HOME": str(tmp_path / "empty-home")}
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", "adapters", "approve", "lab/none"],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "error: no adapter for lab/none" in proc.stderr
    assert "next: propose one: draftset adapters propose lab/none" in proc.stderr


def test_show_prints_untrusted_text_literally(home):
    spec = make_spec(role_map={"[/]": "user", "[bold]gpt": "assistant"}, reasons={"mode": "card says [red]Kimi[/]"})
    rows = [{"messages": [{"role": "[/]", "content": "q"}, {"role": "[bold]gpt", "content": "a"}]}] * 3
    store.save_spec(Catalog(home), spec, contract=run_contract(spec, raw(rows)).to_json())
    out = _run("show", "lab/data").output
    assert "card says [red]Kimi[/]" in out and "[bold]gpt" in out
