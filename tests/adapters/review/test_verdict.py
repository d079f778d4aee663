"""One verdict per adapter (adapters.review.verdict), from real contract results, and the approval gate that reads it."""

from __future__ import annotations

import pytest

from adapters.prove.contract import run_contract
from adapters.review import review, store, verdict
from catalog import Catalog
from catalog.errors import DraftsetError
from tests.kits.adapters import make_spec, raw

CHAT = [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]} for i in range(4)]
# Calls a tool that `tools` never declares: the contract's warning-severity check.
UNDECLARED = [
    {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
            },
            {"role": "tool", "content": "a.txt", "tool_call_id": "c1"},
            {"role": "assistant", "content": "done"},
        ]
    }
] * 3
TOOLS = {
    "role_map": {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"},
    "tool_calls_key": "tool_calls",
    "tool_call_id_key": "tool_call_id",
    "mode": "native",  # regenerate would cut the context before the call
}


def _contract(rows, **fields):
    return run_contract(make_spec(**fields), raw(rows)).to_json()


def test_pass_fail_warning_and_refused_are_told_apart():
    assert verdict.verdict(_contract(CHAT)).kind == "pass"
    warned = verdict.verdict(_contract(UNDECLARED, **TOOLS))
    assert warned.kind == "pass with warnings" and warned.passed and not warned.errors
    assert [w.check for w in warned.warnings] == ["tools_declared"] and "'ls'" in warned.warnings[0].example
    assert "1 warning" in warned.headline and "FAIL" not in warned.headline
    bot = [{"messages": [{"role": "user", "content": "q"}, {"role": "bot", "content": "a"}]}] * 5
    failed = verdict.verdict(_contract(bot))
    assert failed.kind == "fail" and not failed.passed and [p.check for p in failed.errors] == ["yield", "roles_mapped"]
    assert "'bot'" in failed.errors[1].example and "fix the spec" in failed.next_step("lab/data")
    assert "approve" not in failed.next_step("lab/data")  # never "then approve" on a failing verdict
    media = {"checks": [{"name": "media", "passed": False, "detail": "5 of 5 rows carry media"}], "n_rows": 5}
    assert verdict.verdict(media).kind == "refused" and verdict.verdict(media).refusal == "media"
    assert verdict.verdict(None).kind == "not run" and verdict.verdict(_contract(CHAT), current=False).kind == "not run"


def test_a_cause_is_one_line_with_its_count_and_one_example():
    check = {
        "name": "content",
        "passed": False,
        "detail": "12 problem(s): row 3 empty; row 4 empty; row 9 empty (+9 more)",
    }
    (problem,) = verdict.verdict({"checks": [check]}).errors
    assert problem.line() == "content: 12 × row 3 empty"
    severity = {"name": "plausible", "passed": False, "severity": "warning", "detail": "x", "examples": ["row 1"]}
    info = {"name": "accounting", "passed": False, "severity": "info", "detail": "y"}
    found = verdict.verdict({"checks": [severity, info]})
    assert found.kind == "pass with warnings" and found.warnings[0].example == "row 1"


def test_approval_waits_for_open_review_items(home):
    cat = Catalog(home)
    spec = make_spec(needs_review=["source.split"])
    store.save_spec(cat, spec, contract=run_contract(spec, raw(CHAT)).to_json())
    found = verdict.of_record(store.require(cat, "lab/data"))
    assert found.passed and not found.approvable and found.blockers() == ["REVIEW open: source.split"]
    with pytest.raises(DraftsetError, match="open REVIEW item.*source.split") as err:
        review.approve(cat, "lab/data", "alice", note="looks fine")
    assert "draftset adapters approve lab/data --checked source.split" in str(err.value.hint)
    with pytest.raises(DraftsetError, match="unknown open REVIEW item 'source.splti'.*did you mean 'source.split'"):
        review.mark_checked(cat, "lab/data", ["source.splti"], "alice")
    checked = review.mark_checked(cat, "lab/data", ["source.split"], "alice")
    assert checked.spec.needs_review == [] and "checked by alice" in checked.spec.reasons["source.split"]
    assert review.approve(cat, "lab/data", "alice").status == "approved"


def test_force_with_a_note_overrides_an_open_review_item(home):
    cat = Catalog(home)
    spec = make_spec(needs_review=["category"])
    store.save_spec(cat, spec, contract=run_contract(spec, raw(CHAT)).to_json())
    assert review.approve(cat, "lab/data", "alice", note="category is right", force=True).status == "approved"


def test_cli_api_and_page_share_the_verdict(home):
    from pipeline.cli.adapters_view import contract_cell
    from pipeline.servers.service.review_data import summary

    cat = Catalog(home)
    spec = make_spec(**TOOLS)
    store.save_spec(cat, spec, contract=run_contract(spec, raw(UNDECLARED)).to_json())
    record = store.require(cat, "lab/data")
    assert contract_cell(record) == summary(record)["verdict"]["kind"] == "pass with warnings"
    assert summary(record)["next"] == "draftset adapters approve lab/data"


def test_rejected_rows_are_one_line_per_cause():
    rows = [{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]}] * 4 + CHAT
    causes = verdict.rejected_by_cause(_contract(rows))
    assert [(c, n) for c, n, _ in causes] == [("content is empty", 4)]
    assert causes[0][2].startswith("row 0 messages[1].content: content is empty")


def test_next_step_quotes_review_items_and_ids_that_come_from_data():
    """A review item names a data label (role_map.<label>): the suggested approve command must hand it to
    draftset as one argument, never run it."""
    import shlex

    hostile = "role_map.$(touch PWNED)`id`;x"
    found = verdict.Verdict("pass", review_open=[hostile])
    step = found.next_step("lab/data")
    argv = shlex.split(step.split("then: ", 1)[1])
    assert argv == ["draftset", "adapters", "approve", "lab/data", "--checked", hostile]
    approved = shlex.split(verdict.Verdict("pass").next_step("o/$(x)", status="approved"))
    assert approved == ["draftset", "ingest", "--repo", "o/$(x)"]
