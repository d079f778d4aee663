"""find's proposal phase, checkpointed one dataset at a time (agents/proposals.py): Ctrl-C or a crashed
proposal keeps every finished proposal, the error says what is saved and what --resume will redo, and the
resume proposes only the rest; the counts add up.

The proposer is a stand-in (FAKE, control flow only) for adapters.review.propose.propose_one: it really saves a
spec through the adapters store, as the real one does, and answers a contract pass or FAIL, a refusal by
name or a DraftsetError by repo; on a chosen call it crashes (a FAKE RuntimeError) or is interrupted.
Around it everything is real: the CLI's proposal loop (adapters_cmd.propose_many), the catalog table.
"""

from __future__ import annotations

import pytest

from adapters.prove.contract import ContractResult
from adapters.review import propose, store
from agents import proposals
from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.cli import common, find_cmd
from tests.kits.adapters import REVISION, make_spec

PLANNED = {"lab/a": "pass", "lab/b": "refused", "lab/c": "error", "lab/d": "pass", "lab/e": "fail"}


class FakeProposer:
    """FAKE propose_one: the outcome PLANNED names; `stop_at` (a repo) raises `stop` once, before proposing."""

    def __init__(self, stop_at: str | None = None, stop: type[BaseException] = RuntimeError):
        self.calls: list[str] = []
        self.stop_at, self.stop = stop_at, stop

    def __call__(self, catalog: Catalog, repo_id: str, **_: object) -> propose.Outcome:
        self.calls.append(repo_id)
        if repo_id == self.stop_at:
            self.stop_at = None
            raise self.stop("FAKE crash in the proposer")
        kind = PLANNED[repo_id]
        if kind == "refused":
            return propose.Outcome(repo_id, refused="plain text (FAKE)")
        if kind == "error":
            raise DraftsetError("FAKE: the Hub answered 500 for this dataset")
        store.save_spec(catalog, make_spec(repo_id=repo_id))
        return propose.Outcome(repo_id, contract=_contract(passed=kind == "pass"))


def _contract(passed: bool) -> ContractResult:
    return ContractResult.model_validate(
        {
            **{"passed": passed, "spec_hash": "h", "revision": REVISION, "yield": 1.0},
            **{"n_rows": 4, "n_malformed": 0, "n_rejected": 0, "n_records": 4},
            **{"checks": [], "role_counts": {}, "reject_reasons": {}, "quarantined": []},
        }
    )


@pytest.fixture
def planned(home) -> Catalog:
    """A recorded plan `plan-x` over PLANNED, scored in that order."""
    common.settings.cache_clear()
    cat = Catalog(home)
    with cat.writer() as con:
        for i, repo in enumerate(PLANNED):
            con.execute("INSERT INTO candidates (repo_id, score) VALUES (?, ?)", [repo, 0.9 - i / 10])
            con.execute("INSERT INTO plan_items (plan_id, repo_id) VALUES ('plan-x', ?)", [repo])
    return cat


def _stored(cat: Catalog) -> dict[str, str | None]:
    rows = cat.query("SELECT repo_id, outcome FROM find_proposals WHERE run_id = 'find-x' ORDER BY position")
    return {r["repo_id"]: r["outcome"] for r in rows}


def test_a_crash_keeps_the_finished_proposals_and_resume_proposes_only_the_rest(planned, monkeypatch):
    fake = FakeProposer(stop_at="lab/d")  # the 4th of 5 crashes
    monkeypatch.setattr(propose, "propose_one", fake)
    with pytest.raises(DraftsetError) as err:
        find_cmd._propose_planned("find-x", "plan-x", 5)
    assert fake.calls == ["lab/a", "lab/b", "lab/c", "lab/d"]
    message, hint = str(err.value), str(err.value.hint)
    assert message.startswith("proposing lab/d crashed (RuntimeError: FAKE crash in the proposer) while proposing")
    assert "find find-x and plan plan-x are recorded" in message
    assert "3 of 5 proposal(s) saved (1 contract pass, 0 contract FAIL, 1 refused by name, 1 failed)" in message
    assert message.endswith(": lab/a, lab/b, lab/c")
    assert hint == "draftset find --resume find-x  (proposes only the other 2: lab/d, lab/e)"
    assert _stored(planned) == {"lab/a": "pass", "lab/b": "refused", "lab/c": "failed", "lab/d": None, "lab/e": None}

    fake.calls.clear()
    find_cmd._propose_planned("find-x", "plan-x", 5)  # what `find --resume find-x` runs after the graph
    assert fake.calls == ["lab/d", "lab/e"]  # never the saved ones again
    phase = proposals.load(planned, "find-x")
    assert phase is not None and phase.todo == []
    counts = phase.counts()
    assert counts == {"targets": 5, "done": 5, "todo": 0, "pass": 2, "fail": 1, "refused": 1, "failed": 1}
    assert sum(counts[o] for o in proposals.OUTCOMES) + counts["todo"] == counts["targets"]
    assert store.load(planned, "lab/d") is not None and store.load(planned, "lab/b") is None

    find_cmd._propose_planned("find-x", "plan-x", 5)  # all saved: nothing proposed at all
    assert fake.calls == ["lab/d", "lab/e"]


def test_ctrl_c_names_what_is_saved_and_what_resume_redoes(planned, monkeypatch):
    fake = FakeProposer(stop_at="lab/c", stop=KeyboardInterrupt)
    monkeypatch.setattr(propose, "propose_one", fake)
    with pytest.raises(DraftsetError) as err:
        find_cmd._propose_planned("find-x", "plan-x", 5)
    message, hint = str(err.value), str(err.value.hint)
    assert message.startswith("interrupted while proposing adapters: find find-x and plan plan-x are recorded; ")
    assert (
        "2 of 5 proposal(s) saved (1 contract pass, 0 contract FAIL, 1 refused by name, 0 failed): lab/a, lab/b"
        in message
    )
    assert hint == "draftset find --resume find-x  (proposes only the other 3: lab/c, lab/d, lab/e)"


def test_the_targets_are_fixed_when_the_phase_starts(planned, monkeypatch):
    monkeypatch.setattr(propose, "propose_one", FakeProposer(stop_at="lab/b", stop=KeyboardInterrupt))
    with pytest.raises(DraftsetError):
        find_cmd._propose_planned("find-x", "plan-x", 3)
    with planned.writer() as con:  # a later find re-scores the candidates: lab/e is now the best
        con.execute("UPDATE candidates SET score = 2.0 WHERE repo_id = 'lab/e'")
    fake = FakeProposer()
    monkeypatch.setattr(propose, "propose_one", fake)
    find_cmd._propose_planned("find-x", "plan-x", 3)
    assert fake.calls == ["lab/b", "lab/c"] and list(_stored(planned)) == ["lab/a", "lab/b", "lab/c"]


def test_a_new_plan_chooses_again_and_keeps_what_it_still_chose(planned):
    phase = proposals.start(planned, "find-x", "plan-x", 3)  # lab/a, lab/b, lab/c
    proposals.commit(planned, "find-x", propose.Outcome("lab/a", refused="plain text (FAKE)"))
    proposals.commit(planned, "find-x", propose.Outcome("lab/b", refused="plain text (FAKE)"))
    with planned.writer() as con:  # `find --resume --retry-failed` planned the run again
        for repo in ("lab/a", "lab/d", "lab/e"):
            con.execute("INSERT INTO plan_items (plan_id, repo_id) VALUES ('plan-y', ?)", [repo])
    again = proposals.start(planned, "find-x", "plan-y", 3)
    assert phase.targets == ["lab/a", "lab/b", "lab/c"] and again.targets == ["lab/a", "lab/d", "lab/e"]
    assert again.done == {"lab/a": "refused"} and again.todo == ["lab/d", "lab/e"]
    assert again.plan_id == "plan-y" and _stored(planned) == {"lab/a": "refused", "lab/d": None, "lab/e": None}


def test_propose_next_lines_quote_each_repo_id():
    """The repo ids listed on propose's `next:` lines come from the Hub or an LLM: each one is one shell word."""
    from pipeline.cli.adapters_cmd import _words

    assert _words(["lab/data", "x/y"]) == "lab/data x/y"
    assert _words(["lab/data", "a/b; rm -rf ~"]) == "lab/data 'a/b; rm -rf ~'"
