"""`--json` on every listing command: one JSON document on stdout with the same data as the tables, and
every other line on stderr (so `| jq` always parses)."""

from __future__ import annotations

import json
import os
import re

from typer.testing import CliRunner

from pipeline.cli.app import app
from tests.kits.cli import run_draftset
from tests.pipeline.mix.test_mix import SOURCES, _ingest, _plan


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
    assert table["title"] == "mix j" and rows["never/ingested"] | {"ingested": 0, "dedup_dropped": 0} == {
        "source": "never/ingested",
        "category": "coding",
        "ingested": 0,
        "dedup_dropped": 0,
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
    assert all(" " not in key for t in [*doc["tables"], *status["tables"]] for key in t["columns"])  # snake_case
    assert [r["stage"] for r in runs][:2] == ["mix", "dedup"] and all(r["status"] == "ok" for r in runs[:2])
    assert runs[0]["subject"] == "j" and runs[1]["subject"].endswith("datasets")  # what each run worked on
    narrow = run_draftset("status", env={**os.environ, "DRAFTSET_HOME": str(home), "COLUMNS": "80"}).stdout
    lines = narrow.splitlines()[1:]  # the first names the (long) regen folder
    assert " j " in narrow and "4 datasets" in narrow and not any(len(line) > 80 for line in lines), narrow
    assert "took" in narrow and "left out at this width: run_id" in narrow and not re.search(r":\d\d\.\d", narrow), (
        narrow
    )

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
    assert table["columns"][:2] == ["repo_id", "status"]
    rows = table["rows"]
    assert len(rows) >= 20 and all(set(r) == set(table["columns"]) for r in rows)
    assert {r["verdict"]["kind"] for r in rows} <= {"pass", "pass with warnings", "fail", "refused", "not run"}
    assert all(len(r["spec_hash"]) == 64 for r in rows)  # whole, where the table shows 8 characters
    for r in rows:  # "pass" never hides "blocked": the approval column follows the verdict's blockers
        assert r["approval"] == (
            "approved" if r["status"] == "approved" else "ready" if r["verdict"]["approvable"] else r["approval"]
        )
        assert r["status"] == "approved" or r["verdict"]["approvable"] or r["approval"].startswith("blocked: ")
    text = " ".join(CliRunner().invoke(app, ["adapters", "list"], env={"COLUMNS": "240"}).output.split())
    for row in rows:  # the same data as the table
        assert row["repo_id"] in text and str(row["status"]) in text and row["approval"] in text


def test_adapters_show_test_and_preview_as_json(fixture_home, hub_url, monkeypatch):
    from pipeline.settings import settings

    home, _ = fixture_home
    monkeypatch.setenv("DRAFTSET_HOME", str(home))
    monkeypatch.setenv("HF_ENDPOINT", hub_url)
    settings.cache_clear()
    repo = "nebius-mini/swe-agent-trajectories-mini"
    shown = _json("adapters", "show", repo, "--json")
    assert shown["repo_id"] == repo and len(shown["spec_hash"]) == 64  # full hashes for scripts, never cut
    assert shown["record"]["spec_hash"] == shown["spec_hash"] and shown["verdict"]["kind"] in {
        "pass",
        "pass with warnings",
    }
    assert set(shown["verdict"]) >= {"headline", "approvable", "blockers"} and shown["next"].startswith("draftset ")
    assert all(" " not in key for key in [*shown, *shown["verdict"]])  # snake_case keys throughout
    row = _json("adapters", "preview", repo, "--row", "3", "--json")
    assert row["row"] == 3 and isinstance(row["raw"], dict) and isinstance(row["canonical"], list)
    assert row["canonical"][0]["source"]["row_index"] == 3 and row["spec_hash"] == shown["spec_hash"]
    tested = _json("adapters", "test", repo, "--rows", "40", "--json")
    (one,) = tested["adapters"]
    assert one["repo_id"] == repo and one["contract"]["n_rows"] == 40 and one["verdict"]["passed"] is True


# -- every listing: the raw numbers, and a check that no table command is left without --json ----------------
def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers(row: dict, *keys: str) -> None:
    for key in keys:
        assert _is_number(row[key]), (key, row[key])


def _rows(doc: dict, title_part: str = "") -> list[dict]:
    (table,) = [t for t in doc["tables"] if title_part in (t["title"] or "")]
    return table["rows"]


def test_status_json_carries_numbers_and_the_text_keeps_its_formatting(home):
    from catalog import Catalog
    from catalog.home import Home

    job = Home(home).regen_root / "m1" / "progress.json"
    job.parent.mkdir(parents=True)
    snapshot = {"mix": "m1", "shard": None, "state": "done", "total": 20_000, "results": 19_332, "errors": 3}
    snapshot |= {"skipped": 5, "resumed": 660, "req_s": 1.1, "tok_s": 830.5, "mean_completion_tokens": 788.0}
    job.write_text(json.dumps({**snapshot, "eta_s": 0, "updated_at": "2026-12-02T00:10:00+00:00"}))
    Catalog(home).upsert(
        "stage_runs",
        [{"run_id": "ingest-1", "stage": "ingest", "status": "ok", "counts": {"in": 19_332, "out": 19_000}}],
    )
    doc = _json("status", "--json")
    (job_row,) = _rows(doc, "regeneration jobs")
    _numbers(job_row, "done", "total", "results", "errors", "skipped", "req_per_s", "tok_per_s", "eta_s")
    assert job_row["done"] == 19_332 + 3 + 5 + 660 and job_row["total"] == 20_000
    (run,) = _rows(doc, "recent stage runs")
    assert run["counts"] == {"in": 19_332, "out": 19_000}  # a mapping of numbers, not "in=19,332 out=19,000"
    text = CliRunner().invoke(app, ["status"], env={"COLUMNS": "200"}).output
    assert "20000/20000" in text and "19332/3/5" in text and "in=19332 out=19000" in text  # text as before


def test_users_flags_estimate_and_hub_list_as_json(home, hub_url):
    from adapters.prove.contract import run_contract
    from adapters.review import flags, store
    from catalog import Catalog
    from pipeline.servers.service.users import add_user
    from tests.kits.adapters import make_spec, raw

    cat = Catalog(home)
    add_user(cat, "rita", "reviewer")
    (user,) = _rows(_json("users", "list", "--json"))
    assert user["name"] == "rita" and user["role"] == "reviewer" and "token" not in json.dumps(user)

    spec = make_spec()
    rows = [{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}] * 3
    record = store.save_spec(cat, spec, contract=run_contract(spec, raw(rows)).to_json())
    flags.add(
        cat, "lab/data", record.spec_hash, record.revision, 2, "markup", "stray <b>", "rita", current=record.spec_hash
    )
    doc = _json("adapters", "flags", "lab/data", "--json")
    (flag,) = doc["flags"]
    _numbers(flag, "row_index")
    assert doc["verdict"]["kind"] == "pass with warnings" and _rows(doc)[0]["row"] == 2

    estimate = _rows(_json("check", "estimate", "--accept-length", "1.1", "--accept-length", "3.4", "--json"))
    for row in estimate:
        _numbers(row, "accept_length", "speedup_ratio", "round_cost_target_steps")
    assert [r["faster"] for r in estimate] == [False, True]

    hub = _rows(_json("hub", "check", "--limit", "3", "--json"))
    assert len(hub) == 3 and all(_is_number(r["downloads"]) for r in hub)


def test_capture_and_train_list_as_json(toy, tmp_path):
    doc = _json("capture", str(toy.build), "--model", str(toy.model), "--out", str(tmp_path / "cap"), "--json")
    (cap,) = _rows(doc, "capture")
    _numbers(cap, "samples", "tokens", "loss_tokens", "hidden_bytes_per_token", "file_bytes")
    assert cap["file_bytes"] > 0 and all(_is_number(j) for j in cap["taps_hf_j"])
    out = tmp_path / "draft"
    trained = _json("train", str(tmp_path / "cap"), "--out", str(out), "--max-steps", "2", "--json")
    (train_row, *_) = _rows(trained, "draft accuracy")
    assert train_row["split"] == "train" and all(0 <= a <= 1 for a in train_row["step_accuracy_fraction"])


# Commands that print a table but whose --json is exercised by another test (that test's file is named, and
# checked to pass --json to that command), or that have no --json on purpose (the reason says why).
JSON_TESTED_ELSEWHERE = {
    "ingest": "tests/pipeline/cli/test_json_ingest.py",
    "dedup": "tests/pipeline/cli/test_json_ingest.py",
    "model init-toy": "tests/pipeline/model/test_toy.py",
    "model convert-tokenizer": "tests/pipeline/targets/test_convert_tokenizer.py",
    "build": "tests/pipeline/build/test_build_stage.py",
    "check accept-length": "tests/eval/specdecode/test_specdecode.py",
    "check draft": "tests/eval/specdecode/test_specdecode.py",
    "regenerate": "tests/pipeline/regenerate/test_regen_json.py",
    "check serve": "tests/eval/checks/test_serve_lint.py",  # its own report document, not tables
    "find": "tests/agents/test_find_cli.py",  # its own report document, not tables
}
JSON_TESTED_HERE = {
    "mix", "status", "sql", "adapters list", "adapters flags", "users list", "check estimate", "hub check",
    "capture", "train", "adapters show", "adapters test", "adapters preview",
}  # fmt: skip
NO_JSON = {
    "adapters propose": "proposes and tests; adapters list --json lists what it stored",
    "model import-gguf": "has --json; exercised only where the SmolLM2 GGUF is fetched (a PyPI download)",
    "check pilot": "has --json; trains a draft per subset (minutes), records built as accept-length's are",
}


def _commands():
    """(path, click command) for every leaf command of `draftset`."""
    import typer.main

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs is None:
            yield " ".join(path), cmd
            return
        for name, sub in subs.items():
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


def _prints_table(callback) -> bool:
    """Whether the command's function, or a function of the CLI it calls (by name, transitively), prints a
    table: a source-level reading, so a new table command without --json is caught here."""
    import inspect
    import re

    import eval.cli.check_cmd
    import pipeline.cli.adapters_view
    import pipeline.cli.find_view
    from pipeline.cli import adapters_cmd, data_cmd, draft_cmd, hub_cmd, model_cmd, regen_cmd, serve_cmd

    modules = [adapters_cmd, data_cmd, draft_cmd, hub_cmd, model_cmd, regen_cmd, serve_cmd]
    modules += [pipeline.cli.adapters_view, pipeline.cli.find_view, eval.cli.check_cmd, inspect.getmodule(callback)]
    known = {name: f for m in modules for name, f in vars(m).items() if inspect.isfunction(f)}
    seen, todo = set(), [callback]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        source = inspect.getsource(f)
        if "print_table(" in source:
            return True
        todo += [known[n] for n in re.findall(r"\b([A-Za-z_]\w*)\(", source) if n in known and known[n] is not f]
    return False


def test_every_table_command_has_json_and_a_test_that_parses_it():
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    has_json, tables = set(), set()
    for path, cmd in _commands():
        if any("--json" in getattr(p, "opts", ()) for p in cmd.params):
            has_json.add(path)
        if _prints_table(cmd.callback):
            tables.add(path)
    missing = tables - has_json - set(NO_JSON)
    assert not missing, f"table commands without --json: {sorted(missing)}"
    untested = has_json - JSON_TESTED_HERE - set(JSON_TESTED_ELSEWHERE) - set(NO_JSON)
    assert not untested, f"--json commands no test parses: {sorted(untested)}"
    for path, test_file in JSON_TESTED_ELSEWHERE.items():
        text = (root / test_file).read_text()
        words = [f'"{w}"' for w in path.split()]
        assert all(w in text for w in words) and '"--json"' in text, (path, test_file)
    assert {"users list", "model init-toy", "capture", "train", "check draft", "status"} <= has_json


def test_flags_route_quotes_each_segment_of_a_repo_id():
    """A typo'd repo id with `?`, `#` or `/` stays inside its path segment, as the client's other routes do."""
    import pytest

    from catalog.errors import DraftsetError
    from pipeline.cli.flags_cmd import _path

    assert _path("lab/data") == "/api/adapters/lab/data"
    assert _path("lab/da?ta#x") == "/api/adapters/lab/da%3Fta%23x"
    assert _path("lab/a/../users") == "/api/adapters/lab/a%2F..%2Fusers"
    with pytest.raises(DraftsetError):
        _path("nodash")


def test_flags_resolve_through_the_service_refuses_an_empty_note_with_the_local_hint():
    """Before any call: the same one-line refusal and suggested command as the local `flags.resolve`."""
    import pytest

    from adapters.review.flags import resolve_hint
    from catalog.errors import DraftsetError
    from pipeline.cli.flags_cmd import _resolve_remote

    with pytest.raises(DraftsetError) as refused:
        _resolve_remote(None, "lab/da ta", "f1", "  ")
    assert refused.value.hint == resolve_hint("lab/da ta", "f1") and "'lab/da ta'" in refused.value.hint
