"""Store, review and the ingestion gate against a real DuckDB catalog."""

from __future__ import annotations

import pytest

from adapters.prove.contract import run_contract
from adapters.review import review, store
from adapters.review.gate import require_approved
from catalog import Catalog
from catalog.errors import DraftsetError
from tests.kits.adapters import REVISION, make_spec, raw

ROWS = [
    {"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]} for i in range(6)
]


@pytest.fixture()
def cat(tmp_path) -> Catalog:
    return Catalog(tmp_path / "home")


def _tested(cat: Catalog, spec=None) -> store.AdapterRecord:
    spec = spec or make_spec()
    return store.save_spec(cat, spec, contract=run_contract(spec, raw(ROWS)).to_json())


def test_unknown_adapter_is_refused_with_the_propose_command(cat):
    with pytest.raises(DraftsetError) as err:
        require_approved(cat, "lab/data", REVISION)
    assert "draftset adapters propose lab/data" in err.value.hint


def test_unapproved_adapter_is_refused_with_the_commands_to_run(cat):
    _tested(cat)
    with pytest.raises(DraftsetError) as err:
        require_approved(cat, "lab/data", REVISION)
    assert "not approved" in str(err.value)
    assert "draftset adapters test lab/data && draftset adapters approve lab/data --by NAME" in err.value.hint


def test_approved_adapter_passes_and_records_who_and_what(cat):
    _tested(cat)
    record = review.approve(cat, "lab/data", "alice", "looks right")
    assert record.status == "approved" and record.approved_spec_hash == make_spec().spec_hash()
    assert record.approved_revision == REVISION and record.reviewed_at is not None
    assert require_approved(cat, "lab/data", REVISION) == make_spec()
    row = cat.query("SELECT status, reviewed_by, note FROM adapters WHERE repo_id = 'lab/data'")[0]
    assert row == {"status": "approved", "reviewed_by": "alice", "note": "looks right"}


def test_edited_spec_makes_the_approval_stale_and_the_gate_refuses(cat):
    _tested(cat)
    review.approve(cat, "lab/data", "alice")
    record = review.accept_edit(cat, "lab/data", make_spec(mode="native").to_yaml())
    assert record.status == "stale"
    with pytest.raises(DraftsetError, match="stale: the spec changed"):
        require_approved(cat, "lab/data", REVISION)


def test_new_dataset_revision_makes_the_approval_stale(cat):
    _tested(cat)
    review.approve(cat, "lab/data", "alice")
    with pytest.raises(DraftsetError, match="stale: approved for revision") as err:
        require_approved(cat, "lab/data", "b" * 40)
    assert "draftset adapters propose lab/data" in err.value.hint
    newer = make_spec(source={**make_spec().source.model_dump(), "revision": "b" * 40})
    assert store.save_spec(cat, newer).status == "stale"


def test_spec_tampered_in_the_catalog_is_refused(cat):
    _tested(cat)
    review.approve(cat, "lab/data", "alice")
    tampered = make_spec(role_map={"user": "user", "assistant": "assistant", "system": "user"})
    with cat.writer() as con:
        con.execute("UPDATE adapters SET spec = ? WHERE repo_id = 'lab/data'", [tampered.to_json()])
    with pytest.raises(DraftsetError, match="stale"):
        require_approved(cat, "lab/data", REVISION)


def test_rejected_adapter_is_refused(cat):
    _tested(cat)
    review.reject(cat, "lab/data", "bob", "wrong split")
    with pytest.raises(DraftsetError, match="rejected by bob: wrong split"):
        require_approved(cat, "lab/data", REVISION)


def test_approve_refuses_failing_or_missing_contract_unless_forced_with_note(cat):
    store.save_spec(cat, make_spec())
    with pytest.raises(DraftsetError, match="no contract result"):
        review.approve(cat, "lab/data", "alice")
    bad = make_spec(role_map={"user": "user"})
    store.save_spec(cat, bad, contract=run_contract(bad, raw(ROWS)).to_json())
    with pytest.raises(DraftsetError, match="contract of lab/data fails: .*'assistant'"):
        review.approve(cat, "lab/data", "alice")
    with pytest.raises(DraftsetError, match="--force needs --note"):
        review.approve(cat, "lab/data", "alice", force=True)
    record = review.approve(cat, "lab/data", "alice", note="assistant turns unused here", force=True)
    assert record.status == "approved" and record.note == "assistant turns unused here"


def test_map_roles_records_the_decision_and_writes_yaml(cat):
    store.save_spec(
        cat, make_spec(role_map={"customer": "user", "agent": "assistant"}, needs_review=["role_map.supervisor_note"])
    )
    record = review.map_roles(cat, "lab/data", ["supervisor_note=drop"], "carol")
    assert record.spec.role_map["supervisor_note"] == "drop"
    assert "set by carol" in record.spec.reasons["role_map.supervisor_note"]
    assert record.spec.needs_review == []
    assert "supervisor_note: drop" in store.yaml_path(cat.home, "lab/data").read_text()
    with pytest.raises(DraftsetError, match="cannot read role mapping 'supervisor_note=boss'") as err:
        review.map_roles(cat, "lab/data", ["supervisor_note=boss"], "carol")
    assert "LABEL=ROLE" in err.value.hint


def test_edit_to_another_repo_or_invalid_yaml_is_refused(cat):
    store.save_spec(cat, make_spec())
    other = make_spec(source={**make_spec().source.model_dump(), "repo_id": "x/y"})
    with pytest.raises(DraftsetError, match="names x/y"):
        review.accept_edit(cat, "lab/data", other.to_yaml())
    with pytest.raises(DraftsetError, match="invalid"):
        review.accept_edit(cat, "lab/data", "source: 3\nlayout: messages\n")


def test_re_proposal_keeps_a_persons_role_decisions_only_for_labels_still_unmapped():
    proposed = dict(role_map={"customer": "user", "agent": "assistant"}, needs_review=["role_map.supervisor_note"])
    old = make_spec(
        role_map={"customer": "user", "agent": "assistant", "supervisor_note": "drop"},
        reasons={"role_map.supervisor_note": "set by ana: drop"},
    )
    kept = review.keep_decisions(old, make_spec(**proposed))
    assert kept.role_map["supervisor_note"] == "drop" and kept.needs_review == []
    assert kept.reasons["role_map.supervisor_note"] == "set by ana: drop"
    # A hand edit removed the mapping but left its reason: nothing to keep, the label stays for review.
    edited = make_spec(
        role_map={"customer": "user", "agent": "assistant"}, reasons={"role_map.supervisor_note": "set by ana: drop"}
    )
    fresh = review.keep_decisions(edited, make_spec(**proposed))
    assert "supervisor_note" not in fresh.role_map and fresh.needs_review == ["role_map.supervisor_note"]
