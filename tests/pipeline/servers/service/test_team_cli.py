"""Team mode end to end: with DRAFTSET_SERVER and DRAFTSET_TOKEN set, every read command and ingest go through
the real service on loopback and print what the same command prints locally; the rest say they are local-only.

One home (a copy of the session's fixture home: every fixture adapter approved) is first read by the local
commands, then served by one service for the whole module. The team-mode runs point DRAFTSET_HOME at an empty
folder, so a command that quietly opened a local catalog would fail or print nothing instead of passing.
The CLI runs in process through its real entry point (`main`: exit code and the one-line errors), over HTTP.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from unittest import mock

import pytest
from service_kit import add_users

from pipeline.settings import Settings, settings

SHOWN = "weird-roles/customer-support-chats"  # a contract with findings and REVIEW items: a full `show`
BROKEN = "broken-org/malformed-jsonl"  # rows 3.. malformed: ingest drops and quarantines them
CLEAN = "sharegpt-lab/sharegpt-vicuna-mini"


@dataclass
class Done:
    code: int
    out: str
    err: str


def draftset(*args: str, env: dict[str, str]) -> Done:
    """`draftset ARGS` through `main` with exactly these DRAFTSET_* variables (the rest of the environment kept)."""
    from pipeline.cli.app import main

    clean = {k: v for k, v in os.environ.items() if not k.startswith("DRAFTSET_")}
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        mock.patch.dict(os.environ, {**clean, **env, "COLUMNS": "200"}, clear=True),
        mock.patch.object(sys, "argv", ["draftset", *args]),
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        settings.cache_clear()
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    settings.cache_clear()
    return Done(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def team(fixture_home, tmp_path_factory):
    """(local, remote): run a command on the home itself before the service starts, or through the service."""
    src, _ = fixture_home
    home = tmp_path_factory.mktemp("team-home")
    shutil.copy(src / "catalog.duckdb", home / "catalog.duckdb")
    shutil.copytree(src / "adapters", home / "adapters")
    tokens = add_users(home)
    local_env = {"DRAFTSET_HOME": str(home)}
    nowhere = tmp_path_factory.mktemp("client-without-a-home")  # the team member's machine: no catalog at all
    local: dict[tuple[str, ...], Done] = {}

    def run_local(*args: str) -> Done:
        local[args] = draftset(*args, env=local_env)
        assert local[args].code == 0, local[args].err
        return local[args]

    for args in LOCAL_FIRST:
        run_local(*args)

    from pipeline.servers.service.server import serve_in_thread

    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))

    def remote(*args: str, role: str = "operator") -> Done:
        env = {"DRAFTSET_HOME": str(nowhere), "DRAFTSET_SERVER": running.url, "DRAFTSET_TOKEN": tokens[role]}
        done = draftset(*args, env=env)
        for token in tokens.values():  # never printed, whatever the command or its outcome
            assert token not in done.out + done.err
        return done

    yield local, remote, running.url, home
    running.stop()


INGEST = ("ingest", "--repo", BROKEN, "--repo", CLEAN, "--fresh")
LOCAL_FIRST = [  # ingest first: the local status then shows the same stage runs as the service's
    INGEST,
    ("status", "--limit", "5"),
    ("sql", "SELECT repo_id, status, spec_hash FROM adapters ORDER BY repo_id", "-f", "csv"),
    ("adapters", "list", "--json"),
    ("adapters", "show", SHOWN),
    ("adapters", "preview", BROKEN, "--row", "1"),
    ("adapters", "preview", SHOWN, "--row", "4", "--canonical-only"),
    ("users", "list"),
]


def test_read_commands_print_what_they_print_locally(team):
    local, remote, url, _ = team
    for args in [a for a in LOCAL_FIRST if a[0] not in ("ingest", "status", "adapters") or a[1] in ("show", "preview")]:
        done = remote(*args)
        assert done.code == 0, (args, done.err)
        assert done.out == local[args].out, args  # the same spec, verdict, counts and rows, byte for byte
    shown = local[("adapters", "show", SHOWN)].out
    assert "verdict:" in shown and "next:" in shown  # the comparison above compared a full page
    for row, said in (("100000", "has no row 100000 (it has 80)"), ("-1", "--row must be ≥ 0, got -1")):
        wrong = remote("adapters", "preview", CLEAN, "--row", row, role="viewer")
        assert wrong.code == 1 and wrong.out == "" and said in wrong.err.splitlines()[0], wrong.err
    typo = remote("adapters", "show", SHOWN[:-1], role="viewer")
    assert typo.code == 1 and f"did you mean {SHOWN}?" in typo.err and "Traceback" not in typo.err


def test_status_names_the_service_and_shows_its_home(team):
    local, remote, url, home = team
    done = remote("status", "--limit", "5")
    assert done.code == 0, done.err
    first, rest = done.out.split("\n", 1)
    assert first.startswith(f"catalog: held by draftset serve at {url} (pid {os.getpid()} on ")
    assert rest == local[("status", "--limit", "5")].out  # same regeneration folder, same stage runs
    assert "ingest" in rest and "catalog busy" not in rest
    holder = json.loads(remote("status", "--json", role="viewer").out)["catalog_holder"]
    assert holder["kind"] == "service" and holder["url"] == url and holder["catalog"] == str(home / "catalog.duckdb")


def test_adapters_list_has_the_local_rows(team):
    local, remote, url, _ = team
    (mine,) = json.loads(local[("adapters", "list", "--json")].out)["tables"]
    done = remote("adapters", "list", "--json", role="viewer")
    assert done.code == 0, done.err
    (theirs,) = json.loads(done.out)["tables"]
    assert theirs["title"].endswith(f"on {url}")
    keys = ("repo_id", "verdict", "approval", "status", "mode", "category", "spec_hash")
    assert [[r[k] for k in keys] for r in theirs["rows"]] == [[r[k] for k in keys] for r in mine["rows"]]


def test_ingest_is_a_service_job_with_the_local_counts(team):
    local, remote, url, home = team
    for role in ("viewer", "reviewer"):  # starting jobs is the operator's
        denied = remote(*INGEST, role=role)
        assert denied.code == 1 and denied.out == ""
        assert denied.err.splitlines()[0] == f"error: service: this needs the operator role; {_name(role)} is a {role}"
    done = remote(*INGEST)
    assert done.code == 0, done.err
    table, where = local[INGEST].out.split("quarantine files")
    assert done.out.split("quarantine files")[0] == table  # every dataset's in / out / dropped by reason, TOTAL
    broken = next(line for line in table.splitlines() if BROKEN in line)
    assert "=" in broken and "2/2 ok" in table  # the comparison compared drops by reason, not empty tables
    assert done.out.endswith(f"quarantine files (on the service's host){where}")
    typo = remote("ingest", "--repo", CLEAN[:-1])
    assert typo.code == 1 and "did you mean" in typo.err and CLEAN in typo.err and "Traceback" not in typo.err
    only = remote("ingest", "--repo", CLEAN, "--fresh", "--max-conversation-chars", "1000000")
    assert only.code == 0, only.err
    assert "quarantine files (on the service's host):" in only.out and "1/1 ok" in only.out
    assert remote("ingest", "--repo", CLEAN, "--workers", "2").err.startswith("error: --workers and --executor")


def test_proposing_one_dataset_is_a_service_job(team):
    _, remote, url, _ = team
    denied = remote("adapters", "propose", CLEAN, "--rows", "40", role="viewer")
    assert denied.code == 1 and "this needs the reviewer role" in denied.err
    done = remote("adapters", "propose", CLEAN, "--rows", "40", role="reviewer")
    assert done.code == 0, done.err
    assert f"pass {CLEAN}: " in done.out and f"on {url}" in done.out and "1 contract pass, 0 not" in done.out
    listed = json.loads(remote("adapters", "show", CLEAN, "--json", role="viewer").out)
    assert listed["record"]["contract"]["n_rows"] == 40  # the service's own contract run, stored by it
    typo = remote("adapters", "propose", CLEAN, "--category", "kodin", role="reviewer")
    assert typo.code == 1 and "did you mean" in typo.err and "Traceback" not in typo.err


def _name(role: str) -> str:
    return {"viewer": "vera", "reviewer": "rita", "operator": "olga"}[role]


def test_users_and_role_map_through_the_service(team):
    local, remote, url, home = team
    assert remote("users", "list", role="viewer").err.startswith("error: service: this needs the operator role")
    added = remote("users", "add", "temp", "--role", "viewer")
    assert added.code == 0, added.err
    gone = remote("users", "remove", "temp")
    assert gone.code == 0 and f"through {url}" in gone.out
    listed = remote("users", "list")
    assert "temp" in listed.out and listed.out.count("\n") > local[("users", "list")].out.count("\n")
    assert remote("adapters", "map", SHOWN, "supervisor_note=system", role="viewer").code == 1
    mapped = remote("adapters", "map", SHOWN, "supervisor_note=system", role="reviewer")
    assert mapped.code == 0 and "'supervisor_note': 'system'" in mapped.out, mapped.err
    bad = remote("adapters", "map", SHOWN, "supervisor_note=boss", role="reviewer")
    assert bad.code == 1 and bad.err.startswith("error: cannot read role mapping")


@pytest.mark.parametrize(
    "args",
    [
        ("adapters", "edit", CLEAN),  # propose goes through the service now (test_proposing_one_dataset...)
        ("dedup",),
        ("mix", "m", "--samples", "10"),
        ("regenerate", "m", "--endpoint", "http://127.0.0.1:9"),
        ("check", "draft", "no-such-draft", "--captures", "no-such-capture"),
    ],
)
def test_local_only_commands_say_so_in_one_line(team, args):
    local, remote, url, _ = team
    done = remote(*args)
    lines = done.err.strip().splitlines()
    assert done.code == 1 and len(lines) == 2, done.err
    name = " ".join(args[:2] if args[0] in ("adapters", "check") else args[:1])
    assert lines[0].startswith(f"error: `draftset {name}` is local-only: ")  # before any other check or work
    assert f"DRAFTSET_SERVER={url} is set" in lines[0]
    assert lines[1].startswith("next:") and "export" not in done.err  # never "export" what is exported
    if args[0] in ("mix", "regenerate", "check"):  # stages the service runs as jobs: the page and route named
        kind = "check" if args[0] == "check" else args[0]
        assert f"{url}/stages#stage-{kind}" in lines[1] and f"POST /api/stages/{kind}" in lines[1]


def test_every_local_only_entry_names_a_command():
    from pipeline.cli.app import app
    from pipeline.cli.team import LOCAL_ONLY

    names = {c.name for c in app.registered_commands} | {
        f"{g.name} {c.name}" for g in app.registered_groups for c in g.typer_instance.registered_commands
    }
    assert set(LOCAL_ONLY) <= names
