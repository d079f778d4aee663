"""AdapterSpec validation/round trip/hash and the contract checks on hand-written rows."""

from __future__ import annotations

import pytest

from adapters.infer.infer import _pin_golden
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.spec import AdapterSpec
from catalog.errors import DraftsetError
from tests.kits.adapters import make_spec, raw

CHAT = [
    {"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]} for i in range(10)
]


def test_yaml_and_json_round_trip_keep_the_hash():
    spec = make_spec(reasoning={"delimiters": [["<think>", "</think>"]]}, null_policy={"system": "system_prompt"})
    assert AdapterSpec.from_yaml(spec.to_yaml()) == spec
    assert AdapterSpec.from_json(spec.to_json()).spec_hash() == spec.spec_hash()


def test_hash_ignores_annotations_but_not_behaviour():
    spec = make_spec()
    annotated = spec.model_copy(update={"reasons": {"layout": "why"}, "needs_review": ["category"]})
    assert annotated.spec_hash() == spec.spec_hash()
    assert make_spec(mode="native").spec_hash() != spec.spec_hash()
    assert make_spec(role_map={"user": "user", "assistant": "assistant"}).spec_hash() != spec.spec_hash()


@pytest.mark.parametrize(
    "change, names",
    [
        ({"layuot": "messages"}, "layuot"),  # unknown key
        ({"mode": "nativ"}, "mode"),  # wrong literal
        ({"role_map": {"human": "person"}}, "role_map.human"),  # role outside the canonical set
        ({"min_yield": "high"}, "min_yield"),  # wrong type
        ({"layout": "columns"}, "columns"),  # missing section
    ],
)
def test_invalid_specs_fail_naming_the_field(change, names):
    with pytest.raises(DraftsetError) as err:
        make_spec(**change)
    assert names in str(err.value)


def test_yaml_cannot_construct_objects():
    with pytest.raises(DraftsetError, match="not valid YAML|invalid"):
        AdapterSpec.from_yaml("!!python/object/apply:os.system ['echo hi']")


def test_good_contract_passes_every_check():
    result = run_contract(make_spec(), raw(CHAT))
    assert result.passed, result.failures()
    assert {c.name for c in result.checks} >= {
        "input",
        "yield",
        "roles_mapped",
        "content",
        "regenerate_cut",
        "nesting",
        "deterministic",
        "golden",
    }
    assert result.n_records == 10 and result.role_counts == {"user": 10, "assistant": 10}


def test_unmappable_label_fails_naming_label_and_count():
    rows = [
        {
            "messages": [{"role": "customer", "content": "hi"}, {"role": "agent", "content": "hello"}]
            + ([{"role": "supervisor_note", "content": "vip"}] if i % 3 == 0 else [])
        }
        for i in range(20)
    ]
    result = run_contract(make_spec(role_map={"customer": "user", "agent": "assistant"}), raw(rows))
    failed = {c.name: c.detail for c in result.failures()}
    assert "roles_mapped" in failed
    assert "'supervisor_note' (7 turns)" in failed["roles_mapped"]
    assert "adapters map lab/data supervisor_note=" in failed["roles_mapped"]
    assert result.quarantined[0] == {
        "row_index": 0,
        "field": "messages[2].role",
        "reason": "unmapped role label 'supervisor_note'",
    }


def test_empty_dataset_fails():
    result = run_contract(make_spec(), [])
    assert not result.passed
    assert {c.name for c in result.failures()} >= {"input", "yield"}


def test_zero_records_from_non_empty_input_fails_even_with_zero_threshold():
    rows = [{"messages": [{"role": "assistant", "content": "only answers"}]} for _ in range(5)]
    result = run_contract(make_spec(min_yield=0.0), raw(rows))
    assert "yield" in {c.name for c in result.failures()} and result.n_records == 0


def test_malformed_rows_are_listed_with_index_and_reason():
    rows = raw(CHAT[:4]) + [
        RawRow(4, None, "data/train.jsonl:5: invalid JSON (Expecting value at char 0)"),
        RawRow(5, {"messages": [{"role": "user", "content": None}]}),
    ]
    result = run_contract(make_spec(), rows)
    assert result.n_malformed == 1 and result.n_rejected == 1 and result.n_records == 4
    assert {
        "row_index": 4,
        "field": "<row>",
        "reason": "data/train.jsonl:5: invalid JSON (Expecting value at char 0)",
    } in result.quarantined
    assert {"row_index": 5, "field": "messages[0].content", "reason": "content is null"} in result.quarantined
    assert not result.passed and result.yield_ == pytest.approx(4 / 6, abs=1e-3)


def test_native_contract_needs_trainable_turns_and_regenerate_needs_user_ending():
    native = make_spec(mode="native")
    assert run_contract(native, raw(CHAT)).passed
    only_users = [{"messages": [{"role": "user", "content": "q"}]}] * 5
    assert "yield" in {c.name for c in run_contract(native, raw(only_users)).failures()}


def test_unresolved_json_string_content_fails_nesting():
    inner = '[{"role": "user", "content": "hi"}]'
    rows = [{"messages": [{"role": "user", "content": inner}]}] * 3
    assert "nesting" in {c.name for c in run_contract(make_spec(), raw(rows)).failures()}


def test_golden_examples_catch_a_changed_mapping():
    spec = make_spec()
    multi = {
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ]
    }
    spec.golden = _pin_golden(spec, [(0, multi), *enumerate(CHAT, start=1)])
    assert len(spec.golden) == 3 and run_contract(spec, raw(CHAT)).passed
    # Same golden rows, but a cut that now drops the later turns: the pinned output no longer matches.
    changed = make_spec(cut="first_user", golden=[g.model_dump() for g in spec.golden])
    failed = {c.name: c.detail for c in run_contract(changed, raw(CHAT)).failures()}
    assert "row 0 no longer gives its pinned output" in failed["golden"]
