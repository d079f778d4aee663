"""find's last phase, checkpointed one dataset at a time: adapters proposed for the plan's top datasets.

The phase's targets are chosen once, when it first starts (the plan's N highest-scored datasets, in
order), and stored with the run in the catalog table `find_proposals`; a later find's scores cannot change
what this run's resume proposes. As each proposal ends, its outcome (contract pass, contract FAIL, refused
by name, failed with its error) is committed in its own transaction, keyed by (run id, repo id); the
adapter itself is already stored by then (adapters/review/propose.py saves the spec before the contract runs).

So an interrupted phase (Ctrl-C) or a crashed proposal (a bug: any exception but the DraftsetError that
adapters/review/propose.py records as `failed`) keeps every finished outcome, and `draftset find --resume RUN_ID`
proposes only the datasets without one, never the whole phase again. As for the agents, a recorded
failure is an outcome, not redone by --resume (`draftset adapters propose REPO` retries it). The counts
always add up: targets = pass + FAIL + refused + failed + not done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adapters.review.propose import Outcome
from catalog.db import Catalog, upsert
from catalog.errors import DraftsetError
from catalog.untrusted import command

OUTCOMES = ("pass", "fail", "refused", "failed")
_SHOWN = 5  # repo ids named in one message; the rest are counted


@dataclass(frozen=True)
class Phase:
    """One run's proposal phase as stored: its targets in order and the outcome of each one done."""

    run_id: str
    plan_id: str
    targets: list[str]
    done: dict[str, str]  # repo_id -> one of OUTCOMES

    @property
    def todo(self) -> list[str]:
        return [t for t in self.targets if t not in self.done]

    def counts(self) -> dict[str, int]:
        by = {name: sum(o == name for o in self.done.values()) for name in OUTCOMES}
        return {"targets": len(self.targets), "done": len(self.done), "todo": len(self.todo), **by}

    def tally(self) -> str:
        """`k of n proposals saved (a contract pass, b contract FAIL, c refused by name, d failed)`."""
        c = self.counts()
        return (
            f"{c['done']} of {c['targets']} proposal(s) saved ({c['pass']} contract pass, {c['fail']} contract "
            f"FAIL, {c['refused']} refused by name, {c['failed']} failed)"
        )


def outcome_of(o: Outcome) -> str:
    if o.error is not None:
        return "failed"
    if o.refused is not None:
        return "refused"
    return "pass" if o.ok else "fail"


def choose_targets(catalog: Catalog, plan_id: str, top: int) -> list[str]:
    """The plan's `top` highest-scored datasets, best first (ties by repo id, so a choice is repeatable)."""
    rows = catalog.query(
        "SELECT p.repo_id FROM plan_items p JOIN candidates c USING (repo_id) "
        "WHERE p.plan_id = ? ORDER BY c.score DESC, p.repo_id LIMIT ?",
        [plan_id, top],
    )
    return [r["repo_id"] for r in rows]


def load(catalog: Catalog, run_id: str) -> Phase | None:
    """The stored phase of `run_id`, or None when it never started."""
    if not catalog.path.exists():
        return None
    rows = catalog.query(
        "SELECT repo_id, plan_id, outcome FROM find_proposals WHERE run_id = ? ORDER BY position", [run_id]
    )
    if not rows:
        return None
    done = {r["repo_id"]: r["outcome"] for r in rows if r["outcome"] is not None}
    return Phase(run_id, rows[0]["plan_id"], [r["repo_id"] for r in rows], done)


def start(catalog: Catalog, run_id: str, plan_id: str, top: int) -> Phase:
    """The run's phase as stored; the first time, its targets are chosen and stored (one transaction).

    A run planned again (`--resume --retry-failed` makes a new plan) chooses again from the new plan; an
    outcome already saved for a dataset still chosen is kept (its adapter is this run's), the others go."""
    phase = load(catalog, run_id)
    if phase is not None and phase.plan_id == plan_id:
        return phase
    targets = choose_targets(catalog, plan_id, top)
    rows = [{"run_id": run_id, "repo_id": t, "position": i, "plan_id": plan_id} for i, t in enumerate(targets)]
    with catalog.writer() as con:
        con.execute("DELETE FROM find_proposals WHERE run_id = ? AND NOT list_contains(?, repo_id)", [run_id, targets])
        upsert(con, "find_proposals", rows)  # named columns only: a kept row keeps its outcome
    return load(catalog, run_id) or Phase(run_id, plan_id, targets, {})


def commit(catalog: Catalog, run_id: str, outcome: Outcome) -> None:
    """One proposal's outcome, committed on its own as soon as it ends."""
    catalog.upsert(
        "find_proposals",
        [
            {
                "run_id": run_id,
                "repo_id": outcome.repo_id,
                "outcome": outcome_of(outcome),
                "line": outcome.line(),
                "finished_at": datetime.now(),
            }
        ],
    )


def run(
    catalog: Catalog,
    run_id: str,
    plan_id: str,
    top: int,
    propose: Callable[[list[str], Callable[[Outcome], None]], Any],
) -> Phase:
    """Start or continue the phase: `propose(todo, on_outcome)` proposes the targets not done yet, in order,
    calling `on_outcome` as each one ends. An interrupt or a crash becomes one DraftsetError that says what
    is saved and what --resume will propose."""
    phase = start(catalog, run_id, plan_id, top)
    if phase.todo:
        try:
            propose(phase.todo, lambda outcome: commit(catalog, run_id, outcome))
        except (KeyboardInterrupt, Exception) as exc:
            stored = load(catalog, run_id) or phase
            raise interrupted(stored, exc) from (None if isinstance(exc, KeyboardInterrupt) else exc)
    return load(catalog, run_id) or phase


def interrupted(phase: Phase, exc: BaseException) -> DraftsetError:
    """What an interrupted or crashed phase kept, and the one command that proposes the rest."""
    todo = phase.todo
    why = (
        "interrupted"
        if isinstance(exc, KeyboardInterrupt)
        else f"proposing {todo[0] if todo else 'an adapter'} crashed ({type(exc).__name__}: {exc})"
    )
    saved = [t for t in phase.targets if t in phase.done]
    return DraftsetError(
        f"{why} while proposing adapters: find {phase.run_id} and plan {phase.plan_id} are recorded; "
        f"{phase.tally()}" + (f": {_names(saved)}" if saved else ""),
        hint=command("draftset", "find", "--resume", phase.run_id)
        + f"  (proposes only the other {len(todo)}: {_names(todo)})",
    )


def _names(repos: list[str]) -> str:
    shown = ", ".join(repos[:_SHOWN])
    return shown + (f" and {len(repos) - _SHOWN} more" if len(repos) > _SHOWN else "")
