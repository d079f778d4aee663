"""Inferred adapters for every conversational fixture of the fixture Hub, against tests/fixtures/expected.py.

Real parts only: the local Hub server, huggingface_hub downloads, `datasets`' data-file resolver.
"""

from __future__ import annotations

import pytest

from adapters.infer.infer import Proposal, propose_adapter
from adapters.map.apply import apply_row
from adapters.prove.contract import ContractResult, run_contract
from adapters.read.source import iter_raw_rows
from tests.fixtures.expected import EXPECTED, Expected

TOKEN = "test-token"  # any bearer token opens a gated repo on the local Hub


@pytest.fixture(scope="module")
def proposals(hub_url) -> dict[str, tuple[Proposal, ContractResult, list]]:
    """Propose and contract-test every expected repo once (reading every row: the fixtures are small)."""
    out = {}
    for repo_id, e in EXPECTED.items():
        token = TOKEN if e.gated else None
        proposal = propose_adapter(repo_id, endpoint=hub_url, viewer_base=hub_url + "/viewer", token=token)
        raw = list(iter_raw_rows(proposal.spec, endpoint=hub_url, token=token))
        out[repo_id] = (proposal, run_contract(proposal.spec, raw), raw)
    return out


def _reasoning(spec, attr: str):
    pairs = getattr(spec.reasoning, attr) if spec.reasoning else []
    return tuple(pairs[0]) if pairs else None


@pytest.mark.parametrize("repo_id", sorted(EXPECTED))
def test_inferred_spec_matches_expected(proposals, repo_id):
    e: Expected = EXPECTED[repo_id]
    proposal, result, _ = proposals[repo_id]
    spec = proposal.spec
    assert (spec.layout, spec.mode) == (e.layout, e.mode)
    assert (spec.source.config, spec.source.split, tuple(spec.source.data_files)) == (e.config, e.split, e.data_files)
    assert len(spec.source.revision) == 40 and spec.reasons["source.config"] and spec.reasons["source.split"]
    assert (spec.messages_path, spec.role_key, spec.content_key) == (e.messages_path, e.role_key, e.content_key)
    assert spec.role_map == {k: v for k, v in e.role_map.items() if v is not None}
    assert [label for label, role in e.role_map.items() if role is None] == [
        f.removeprefix("role_map.") for f in spec.needs_review if f.startswith("role_map.")
    ]
    assert result.role_counts == e.role_counts
    assert sorted(proposal.json_strings) == sorted(e.json_string_fields)
    assert (_reasoning(spec, "delimiters"), _reasoning(spec, "unwrap")) == (e.reasoning, e.answer_markers)
    assert (spec.reasoning.key if spec.reasoning else None) == e.reasoning_key
    assert (spec.tool_calls_key, spec.train_flag_key, spec.system_field) == (
        e.tool_calls_key,
        e.mask_key,
        e.system_column,
    )
    assert spec.null_policy.get("system") == e.system_content_key
    if e.layout == "columns":
        assert (tuple(spec.columns.prompt), spec.columns.response) == (e.prompt_columns, e.response_column)
    assert result.n_rows == e.n_rows and result.n_records == e.records
    assert sorted(q["row_index"] for q in result.quarantined) == sorted(e.bad_rows)
    assert all(reason for reason in spec.reasons.values())


def test_sharegpt_human_gpt_yields_every_row(proposals):
    _, result, _ = proposals["sharegpt-lab/sharegpt-vicuna-mini"]
    assert result.passed and result.n_records == result.n_rows == 80


def test_nebius_null_system_text_comes_from_system_prompt(proposals):
    proposal, result, raw = proposals["nebius-mini/swe-agent-trajectories-mini"]
    assert result.passed and result.n_records == 40
    row = raw[0].row
    [record] = apply_row(proposal.spec, 0, row)
    assert row["trajectory"][0]["text"] is None
    assert record.messages[0].role == "system" and record.messages[0].content == row["trajectory"][0]["system_prompt"]
    assert record.messages[-1].role == "user"  # regenerate: the context ends on a user turn


@pytest.mark.parametrize(
    "repo_id", ["kimi-traj/deepswe-kimi-k2-trajectories-mini", "moonshot-fans/kimi-k2-chat-native"]
)
def test_native_multi_turn_yields_every_assistant_turn_trainable(proposals, repo_id):
    proposal, result, raw = proposals[repo_id]
    assert result.passed and proposal.spec.mode == "native"
    assert "names the target family" in proposal.spec.reasons["mode"]
    records = [rec for r in raw for rec in apply_row(proposal.spec, r.row_index, r.row)]
    raw_answers = sum(1 for r in raw for t in r.row[proposal.spec.messages_path] if t["role"] == "assistant")
    answers = [m for rec in records for m in rec.messages if m.role == "assistant"]
    assert len(answers) == raw_answers == EXPECTED[repo_id].role_counts["assistant"]
    assert all(m.train is True for m in answers)
    assert any(sum(m.role == "assistant" for m in rec.messages) > 1 for rec in records)  # multi-turn rows


def test_unmappable_label_fails_the_contract_naming_label_and_count(proposals):
    proposal, result, _ = proposals["weird-roles/customer-support-chats"]
    assert "supervisor_note" not in proposal.spec.role_map
    [failed] = result.failures()
    assert failed.name == "roles_mapped" and "'supervisor_note' (7 turns)" in failed.detail


def test_empty_dataset_fails(proposals):
    proposal, result, _ = proposals["empty-org/empty-dataset"]
    assert proposal.spec.layout == "messages" and not result.passed
    assert {c.name for c in result.failures()} == {"input", "yield"}


def test_json_string_messages_are_decoded(proposals):
    proposal, result, raw = proposals["swesmith-mini/swe-smith-trajectories-mini"]
    assert isinstance(raw[0].row["messages"], str) and proposal.spec.json_fields == ["messages"]
    assert result.passed and result.n_records == 30


def test_malformed_rows_are_quarantined_with_index_and_reason(proposals):
    _, result, _ = proposals["broken-org/malformed-jsonl"]
    by_row = {q["row_index"]: q for q in result.quarantined}
    assert "invalid JSON" in by_row[5]["reason"] and by_row[5]["reason"].startswith("data/train.jsonl:6:")
    assert by_row[9] == {"row_index": 9, "field": "messages[1].content", "reason": "content is null"}
    assert by_row[18]["field"] == "messages[0].content" and "got int" in by_row[18]["reason"]
    assert "content is huge (200,000 chars" in by_row[36]["reason"]
    assert result.n_malformed == 4 and result.n_rejected == 4


def test_wrong_column_types_are_rejected_row_by_row(proposals):
    _, result, _ = proposals["wrongtypes-org/wrong-column-types"]
    reasons = {q["row_index"]: q["reason"] for q in result.quarantined}
    assert reasons[6] == "expected a list of turns, got null"
    assert "yield" in {c.name for c in result.failures()}  # 30/40 is under the 0.8 default: a person decides


def test_without_a_viewer_configs_and_splits_come_from_datasets(hub_url):
    proposal = propose_adapter("h4-mini/ultrachat-mini", endpoint=hub_url, viewer_base="http://127.0.0.1:9/viewer")
    assert (proposal.spec.source.split, proposal.spec.source.data_files) == (
        "train_sft",
        list(EXPECTED["h4-mini/ultrachat-mini"].data_files),
    )
    assert "source.split" in proposal.needs_review


def test_gated_dataset_without_token_says_to_set_hf_token(hub_url):
    from catalog.errors import DraftsetError

    with pytest.raises(DraftsetError, match="gated") as err:
        propose_adapter("xlam-mini/function-calling-mini", endpoint=hub_url, viewer_base=hub_url + "/viewer")
    assert "HF_TOKEN" in err.value.hint


def test_review_notes_for_what_the_record_cannot_carry(proposals):
    hermes = proposals["hermes-fc-mini/hermes-function-calling-mini"][0]
    assert hermes.spec.text_tool_calls == "hermes" and "<tool_call>" in hermes.reasons["text_tool_calls"]
    xlam = proposals["xlam-mini/function-calling-mini"][0]
    assert xlam.spec.tools_field == "tools" and xlam.spec.columns.response_is_tool_calls


@pytest.mark.parametrize(
    "repo_id, verdict", [("tabular-mini/housing-prices", "no_text"), ("vision-mini/image-captions", "media")]
)
def test_non_conversational_datasets_are_refused_by_name(hub_url, repo_id, verdict):
    from adapters.infer.infer import AdapterRefused

    with pytest.raises(AdapterRefused, match="refused") as err:
        propose_adapter(repo_id, endpoint=hub_url, viewer_base=hub_url + "/viewer")
    assert err.value.verdict == verdict and "nothing to adapt" in err.value.hint
