"""Reviewers' per-record flags (adapters.review.flags) in a real catalog, fed back into the one verdict and the
approval gate, and the `draftset adapters flags` command that lists, adds and resolves them."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from adapters.prove.contract import run_contract
from adapters.review import flags, review, store, verdict
from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.cli.app import app
from tests.kits.adapters import make_spec, raw

CHAT = [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]} for i in range(4)]
HOSTILE = "[red]x[/red] \x1b]0;pwned\x07 $(rm -rf ~) '; DROP TABLE adapters; --"


def _passing(cat: Catalog, **fields) -> store.AdapterRecord:
    spec = make_spec(**fields)
    return store.save_spec(cat, spec, contract=run_contract(spec, raw(CHAT)).to_json())


def _flag(cat: Catalog, row: int, kind: str = "lost_text", note: str | None = "turn 2 lost its text") -> flags.Flag:
    record = store.require(cat, "lab/data")
    return flags.add(
        cat, "lab/data", record.spec_hash, record.revision, row, kind, note, "rita", current=record.spec_hash
    )


def test_an_open_flag_warns_blocks_approval_and_resolving_it_unblocks(home):
    cat = Catalog(home)
    assert verdict.of_record(_passing(cat)).kind == "pass"
    first, second = _flag(cat, 14), _flag(cat, 3, note=None)
    record = store.require(cat, "lab/data")
    assert [f.flag_id for f in record.open_flags] == [first.flag_id, second.flag_id]
    found = verdict.of_record(record)
    assert found.kind == "pass with warnings" and found.passed and not found.approvable
    (problem,) = found.warnings
    assert problem.line() == "2 records flagged by reviewers: lost_text ×2, e.g. row 3 lost_text"
    assert found.headline.startswith("pass with warnings (2 open flags)")
    assert f"flag {first.flag_id} open: row 14 lost_text: “turn 2 lost its text”" in found.blockers()
    assert found.next_step("lab/data").endswith(
        f'draftset adapters flags lab/data --resolve {first.flag_id} --note "what was done"'
    )

    with pytest.raises(DraftsetError, match="2 open reviewer flag") as err:
        review.approve(cat, "lab/data", "alice")
    assert "--resolve" in str(err.value.hint) and "--force --note" in str(err.value.hint)
    with pytest.raises(DraftsetError, match="needs --note"):
        flags.resolve(cat, "lab/data", first.flag_id, "alice", "  ")
    with pytest.raises(DraftsetError, match=f"unknown flag 'nope'.*known: {min(first.flag_id, second.flag_id)}"):
        flags.resolve(cat, "lab/data", "nope", "alice", "fixed")
    with pytest.raises(DraftsetError, match="at most 2,000"):
        flags.resolve(cat, "lab/data", first.flag_id, "alice", "x" * (flags.MAX_NOTE + 1))
    flags.resolve(cat, "lab/data", first.flag_id, "alice", "the content key was wrong; fixed")
    with pytest.raises(DraftsetError, match="already resolved by alice"):
        flags.resolve(cat, "lab/data", first.flag_id, "alice", "again")
    assert not verdict.of_record(store.require(cat, "lab/data")).approvable  # one still open
    flags.resolve(cat, "lab/data", second.flag_id, "alice", "row 3 is fine on a second look")
    record = store.require(cat, "lab/data")
    assert verdict.of_record(record).kind == "pass" and [f.state(record.spec_hash) for f in record.flags] == [
        "resolved",
        "resolved",
    ]
    assert review.approve(cat, "lab/data", "alice").status == "approved"


def test_force_with_a_note_overrides_an_open_flag(home):
    cat = Catalog(home)
    _passing(cat)
    _flag(cat, 0)
    with pytest.raises(DraftsetError, match="--force needs --note"):
        review.approve(cat, "lab/data", "alice", force=True)
    assert (
        review.approve(cat, "lab/data", "alice", note="known, fixed upstream next week", force=True).status
        == "approved"
    )
    record = store.require(cat, "lab/data")  # the approval stands; the open flag is still what is said first
    step = verdict.of_record(record).next_step("lab/data", record.status)
    assert step.startswith("1 open flag(s) since the approval: draftset adapters flags lab/data")
    assert step.endswith("draftset ingest --repo lab/data")


def test_a_flag_on_an_older_spec_is_stale_and_blocks_nothing(home):
    cat = Catalog(home)
    old = _passing(cat)
    flag = _flag(cat, 1, kind="wrong_role")
    new = _passing(cat, role_map={"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"})
    assert new.spec_hash != old.spec_hash and flag.state(new.spec_hash) == "stale"
    found = verdict.of_record(store.require(cat, "lab/data"))
    assert found.kind == "pass" and found.approvable and not found.flags_open
    with pytest.raises(DraftsetError, match="spec changed since the page was loaded"):
        now = new.spec_hash  # the store's current spec; the reviewer judged the old one, which is gone
        flags.add(cat, "lab/data", old.spec_hash, old.revision, 2, "markup", None, "rita", current=now)


def test_kinds_rows_and_notes_are_checked(home):
    cat = Catalog(home)
    _passing(cat)
    with pytest.raises(DraftsetError, match="unknown flag kind 'lost_txt'.*did you mean 'lost_text'"):
        _flag(cat, 0, kind="lost_txt")
    with pytest.raises(DraftsetError, match="row must be ≥ 0"):
        _flag(cat, -1)
    with pytest.raises(DraftsetError, match="kind other needs a note"):
        _flag(cat, 0, kind="other", note=" ")
    with pytest.raises(DraftsetError, match="at most 2,000"):
        _flag(cat, 0, note="x" * 2001)
    assert flags.load(cat, "lab/data") == []  # nothing half-stored


def test_a_row_past_the_datasets_row_count_is_refused(home):
    cat = Catalog(home)
    _passing(cat)
    assert _flag(cat, 999).row_index == 999  # the Hub's count unknown: nothing to hold the row against
    with cat.writer() as con:
        con.execute("INSERT INTO candidates (repo_id, n_rows) VALUES ('lab/data', 50)")
    with pytest.raises(DraftsetError, match="lab/data has no row 50 .*50 rows"):
        _flag(cat, 50)
    refused = _cli("flags", "lab/data", "--add", "999", "--kind", "markup", ok=False)
    assert refused.exit_code == 1 and "has no row 999" in str(refused.exception)
    assert _flag(cat, 49).row_index == 49
    assert sorted(f.row_index for f in flags.load(cat, "lab/data")) == [49, 999]


def _cli(*args: str, ok: bool = True):
    result = CliRunner().invoke(app, ["adapters", *args], env={"COLUMNS": "200"})
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_cli_flags_lists_adds_and_resolves_and_show_lists_them(home):
    cat = Catalog(home)
    _passing(cat)
    added = _cli("flags", "lab/data", "--add", "7", "--kind", "markup", "--note", HOSTILE, "--by", "rita")
    assert "flagged row 7 of lab/data as markup" in added.output
    assert "\x1b]0;" not in added.output and "[red]x[/red]" in added.output  # literal: no markup, no escapes
    doc = json.loads(_cli("flags", "lab/data", "--json").stdout)
    (flag,) = doc["flags"]
    assert (
        flag["state"] == "open" and flag["note"] == HOSTILE.strip() and doc["verdict"]["kind"] == "pass with warnings"
    )
    assert shlex.split(doc["next"].rsplit(": ", 1)[1])[:5] == ["draftset", "adapters", "flags", "lab/data", "--resolve"]

    shown = _cli("show", "lab/data").output
    assert "reviewer flags on lab/data: 1 open, 0 stale, 0 resolved" in shown and flag["flag_id"] in shown
    refused = _cli("approve", "lab/data", "--by", "alice", ok=False)
    assert refused.exit_code == 1 and "1 open reviewer flag" in str(refused.exception)

    assert "needs --note" in str(_cli("flags", "lab/data", "--resolve", flag["flag_id"], ok=False).exception)
    done = _cli("flags", "lab/data", "--resolve", flag["flag_id"], "--note", "escaped now", "--by", "alice")
    assert f"resolved flag {flag['flag_id']}" in done.output and "verdict: pass" in done.output
    assert "approved lab/data" in _cli("approve", "lab/data", "--by", "alice").output
