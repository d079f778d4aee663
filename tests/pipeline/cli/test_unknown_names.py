"""Every flag and argument that takes a name, given a typo: one error line with a did-you-mean, never exit 0.

The home holds two adapters, a plan, a find run, two ingested sources (categories coding and chat), a
mix and a build; each typo is one edit away from a real name.
"""

from __future__ import annotations

import pytest

from adapters.review import store
from catalog import Catalog
from catalog.home import Home
from catalog.names import closest, unknown_name
from tests.kits.adapters import make_spec
from tests.pipeline.conftest import make_conv, write_source


@pytest.fixture()
def named_home(home):
    cat = Catalog(home)
    for repo in ("lab/alpha", "lab/beta"):
        store.save_spec(cat, make_spec(repo_id=repo))
    with cat.writer() as con:
        con.execute("INSERT INTO search_runs (run_id, domain) VALUES ('find-20261201-aaaaaa', 'coding')")
        con.execute("INSERT INTO plans (plan_id, run_id) VALUES ('plan-alpha', 'find-20261201-aaaaaa')")
    write_source(home, [make_conv("lab/alpha", i, f"write code {i}", category="coding") for i in range(4)])
    write_source(home, [make_conv("lab/beta", i, f"talk to me {i}", category="chat") for i in range(4)])
    (Home(home).root / "data" / "mix" / "base").mkdir(parents=True)
    (Home(home).kind_root("builds") / "base-build").mkdir(parents=True)
    return home


TYPOS = [
    (["mix", "m2", "--weight", "coding=1", "--weight", "kodin=2"], "'coding'"),
    (["mix", "m2", "--plan", "plan-alpah"], "'plan-alpha'"),
    (["ingest", "--repo", "lab/alpah"], "'lab/alpha'"),
    (["ingest", "--plan", "plan-alpah"], "'plan-alpha'"),
    (["dedup", "--repo", "lab/btea"], "'lab/beta'"),
    (["regenerate", "bsae", "--endpoint", "http://127.0.0.1:9/v1"], "'base'"),
    (["report", "bsae"], "'base'"),
    (["build", "bsae", "--model", "/nonexistent"], "'base'"),
    (["capture", "base-biuld", "--model", "/nonexistent"], "'base-build'"),
    (["find", "--resume", "find-20261201-aaaaab"], "'find-20261201-aaaaaa'"),
    (["adapters", "propose", "lab/alpha", "--category", "kodin"], "'coding'"),
    (["adapters", "propose", "lab/alpha", "--policy", "lmm"], "'llm'"),
    *[
        ([*cmd[:2], "lab/alpah", *cmd[2:]], "lab/alpha")
        for cmd in (
            ["adapters", "show"],
            ["adapters", "preview"],
            ["adapters", "approve", "--force", "--note", "n"],
            ["adapters", "reject", "--note", "n"],
            ["adapters", "map", "x=user"],
            ["adapters", "edit"],
            ["adapters", "test"],
        )
    ],
]


@pytest.mark.parametrize(("args", "suggestion"), TYPOS, ids=[" ".join(a[:2]) + f" {a[-1]}" for a, _ in TYPOS])
def test_a_typo_in_any_name_is_one_line_with_a_did_you_mean(named_home, draftset, args, suggestion):
    done = draftset(*args)
    assert done.returncode == 1, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "did you mean" in errors[0] and suggestion in errors[0], errors[0]
    assert "propose lab/alpah" not in done.stderr  # a typo of a known id is never offered for proposing
    assert "written" not in done.stdout


def test_a_typo_in_a_weight_writes_no_mix(named_home, draftset):
    assert draftset("mix", "m3", "--weight", "kodin=2").returncode == 1
    assert not (Home(named_home).root / "data" / "mix" / "m3").exists()
    ok = draftset("mix", "m3", "--weight", "coding=1", "--weight", "chat=1")
    assert ok.returncode == 0 and "8 records written" in ok.stdout, ok.stdout + ok.stderr


def test_usage_errors_read_like_every_other_error(named_home, draftset):
    done = draftset("sql", "SELECT 1", "--format", "jsn")
    assert done.returncode == 2 and done.stderr.splitlines()[0].startswith("error: Invalid value for '--format'")
    assert "╭" not in done.stderr and done.stderr.splitlines()[1] == "next: draftset sql --help"
    assert "Did you mean 'adapters'" in draftset("adaptrs", "list").stderr


def test_version(draftset):
    done = draftset("--version")
    assert done.returncode == 0 and done.stdout.startswith("draftset ")


def test_closest_finds_owner_and_name_typos():
    known = ["lab/alpha", "lab/beta", "other/alphabet"]
    assert closest("lab/alpah", known)[0] == "lab/alpha"
    assert closest("alpha", known)[0] == "lab/alpha"  # the name alone, owner left out
    assert closest("zzz", known) == []
    many = unknown_name("category", "x", [f"c{i:02d}" for i in range(30)])
    assert "(+18 more)" in str(many) and "did you mean" not in str(many)


def test_a_weight_typo_is_refused_before_dedup_runs(named_home, draftset):
    done = draftset("mix", "m4", "--weight", "kodin=2")
    assert done.returncode == 1 and "did you mean 'coding'" in done.stderr, done.stderr
    assert not Home(named_home).dedup.exists()  # no stage ran for a name that was wrong from the start
    assert not Catalog(named_home).query("SELECT run_id FROM stage_runs WHERE stage = 'dedup'")


def test_a_role_label_no_sampled_row_has_is_refused(named_home, draftset):
    cat = Catalog(named_home)
    spec = make_spec(repo_id="lab/alpha")
    contract = {"spec_hash": spec.spec_hash(), "n_rows": 40, "role_counts": {"user": 40, "assistant": 40, "bot": 3}}
    store.save_spec(cat, spec, contract=contract)
    before = store.require(cat, "lab/alpha").spec_hash
    done = draftset("adapters", "map", "lab/alpha", "boot=drop")
    assert done.returncode == 1 and "did you mean 'bot'" in done.stderr, done.stderr
    assert store.require(cat, "lab/alpha").spec_hash == before  # nothing stored, no approval staled
    assert draftset("adapters", "map", "lab/alpha", "bot=assistant").returncode == 0
    assert store.require(cat, "lab/alpha").spec.role_map["bot"] == "assistant"
    # The spec changed, so that contract no longer judges it (its labels may sit under another key now): a label
    # it never counted is taken as given rather than refused on an older reading.
    assert draftset("adapters", "map", "lab/alpha", "narrator=drop").returncode == 0
