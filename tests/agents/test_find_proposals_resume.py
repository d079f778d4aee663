"""`draftset find` (typer runner, fixture Hub) whose proposal phase crashes part-way: the error says what is
saved and what --resume will redo; `find --resume` runs nothing of the graph again and proposes only the
rest; a third resume reads the run as finished, with its tally.

The proposer is a stand-in (FAKE, control flow only) for adapters.review.propose.propose_one: every dataset is
refused by name, and the second call crashes once with a FAKE RuntimeError. The phase's counts and each
outcome kind are tested in tests/pipeline/cli/test_find_proposals.py."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from adapters.review import propose
from agents.categories import CATEGORIES
from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.cli.app import app

N_AGENTS = len(CATEGORIES)  # one search agent per category brief

runner = CliRunner()


class CrashOnce:
    """FAKE propose_one: refuses every dataset by name; the `crash_on`-th call raises instead (once)."""

    def __init__(self, crash_on: int):
        self.calls: list[str] = []
        self.crash_on: int | None = crash_on

    def __call__(self, catalog: Catalog, repo_id: str, **_: Any) -> propose.Outcome:
        self.calls.append(repo_id)
        if len(self.calls) == self.crash_on:
            self.crash_on = None
            raise RuntimeError("FAKE crash in the proposer")
        return propose.Outcome(repo_id, refused="plain text (FAKE)")


def test_a_crashed_proposal_phase_resumes_with_only_the_rest(hub_url, home, monkeypatch):
    fake = CrashOnce(crash_on=2)
    monkeypatch.setattr(propose, "propose_one", fake)
    first = runner.invoke(app, ["find", "agentic coding", "-n", "1000", "--propose", "3"])
    assert isinstance(first.exception, DraftsetError), first.output
    catalog = Catalog(home)
    (run,) = catalog.query("SELECT run_id, status, finished_at FROM search_runs")
    targets = [
        r["repo_id"]
        for r in catalog.query("SELECT repo_id FROM find_proposals WHERE run_id = ? ORDER BY position", [run["run_id"]])
    ]
    assert len(targets) == 3 and fake.calls == targets[:2]
    message, hint = str(first.exception), first.exception.hint
    assert message.startswith(f"proposing {targets[1]} crashed (RuntimeError: FAKE crash in the proposer)")
    assert "1 of 3 proposal(s) saved (0 contract pass, 0 contract FAIL, 1 refused by name, 0 failed)" in message
    assert hint == f"draftset find --resume {run['run_id']}  (proposes only the other 2: {', '.join(targets[1:])})"

    fake.calls.clear()
    again = runner.invoke(app, ["find", "--resume", run["run_id"]])
    assert again.exit_code == 0, again.output
    assert fake.calls == targets[1:]  # the saved one is not proposed again
    assert f"will propose: {', '.join(targets[1:])}" in again.output
    assert f"find {run['run_id']}: 3 of 3 proposal(s) saved" in again.output
    # nothing of the graph ran again: the run's record is the first one's
    assert catalog.query("SELECT run_id, status, finished_at FROM search_runs") == [run]
    assert len(catalog.query("SELECT * FROM agent_runs")) == N_AGENTS

    third = runner.invoke(app, ["find", "--resume", run["run_id"]])
    assert isinstance(third.exception, DraftsetError)
    assert "already finished; 3 of 3 proposal(s) saved (0 contract pass, 0 contract FAIL, 3 refused" in str(
        third.exception
    )
