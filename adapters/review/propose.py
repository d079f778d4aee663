"""Propose adapters and contract-test them: the orchestration `draftset adapters propose` and `draftset find
--propose` share (no CLI here; the caller renders the outcomes).

One dataset's failure never stops the others: each target ends as an `Outcome` that is proposed (with its
contract result), refused by name (plain text, media, ...), or failed (with the error). A re-proposal keeps
the role mappings a person made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adapters.infer.infer import AdapterRefused, propose_adapter
from adapters.prove.contract import ContractResult
from adapters.review import review, store
from catalog.db import Catalog
from catalog.errors import DraftsetError


@dataclass
class Outcome:
    repo_id: str
    record: store.AdapterRecord | None = None
    contract: ContractResult | None = None
    refused: str | None = None  # the named verdict when the dataset is refused
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Proposed with a passing contract (a refusal by name is a decision, not an error, but it is not ok)."""
        return self.contract is not None and self.contract.passed

    def line(self) -> str:
        if self.error:
            return f"failed {self.repo_id}: {self.error}"
        if self.refused:
            return f"refused {self.repo_id}: {self.refused}"
        summary = self.contract.summary() if self.contract else "no contract result"
        return f"{'pass' if self.ok else 'FAIL'} {self.repo_id}: {summary}"


def propose_one(
    catalog: Catalog,
    repo_id: str,
    *,
    endpoint: str,
    viewer_base: str,
    token: str | None,
    rows: int = 500,
    category: str | None = None,
    llm: tuple[Any, str] | None = None,
) -> Outcome:
    """Propose, store (keeping a person's role mappings) and contract-test one dataset."""
    try:
        proposal = propose_adapter(
            repo_id,
            endpoint=endpoint,
            viewer_base=viewer_base,
            token=token,
            catalog=catalog,
            category=category,
            llm=llm,
        )
    except AdapterRefused as exc:
        return Outcome(repo_id, refused=str(exc))
    old = store.load(catalog, repo_id)
    store.save_spec(catalog, review.keep_decisions(old.spec, proposal.spec) if old else proposal.spec)
    record, result = review.check_adapter(catalog, repo_id, endpoint=endpoint, token=token, rows=rows)
    return Outcome(repo_id, record=record, contract=result)


def propose_many(
    catalog: Catalog,
    targets: list[str],
    *,
    endpoint: str,
    viewer_base: str,
    token: str | None,
    rows: int = 500,
    category: str | None = None,
    llm: tuple[Any, str] | None = None,
    progress: Callable[[str], None] | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every target's outcome; a DraftsetError of one target is recorded, the others still run.

    `on_outcome` is called as each target ends, before the next starts (find's phase commits it then). Without
    it a lone target's DraftsetError is raised, so `adapters propose REPO` fails with that error; with it the
    error is an outcome like any other."""
    outcomes = []
    for repo_id in targets:
        if progress:
            progress(repo_id)
        try:
            outcome = propose_one(
                catalog,
                repo_id,
                endpoint=endpoint,
                viewer_base=viewer_base,
                token=token,
                rows=rows,
                category=category,
                llm=llm,
            )
        except DraftsetError as exc:
            if len(targets) == 1 and on_outcome is None:
                raise
            outcome = Outcome(repo_id, error=str(exc))
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
    return outcomes


def summary_line(outcomes: list[Outcome]) -> str:
    """`N proposed: a pass, b contract FAIL, c refused, d failed`."""
    passed = sum(o.ok for o in outcomes)
    failing = sum(o.contract is not None and not o.ok for o in outcomes)
    refused = sum(o.refused is not None for o in outcomes)
    errors = sum(o.error is not None for o in outcomes)
    return (
        f"{len(outcomes)} dataset(s): {passed} contract pass, {failing} contract FAIL, {refused} refused by "
        f"name, {errors} failed"
    )
