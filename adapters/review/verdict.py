"""One verdict per adapter, computed here and only here: the CLI, the API and the review page all show it.

From the stored contract result (its checks' names, pass/fail and severity) and the spec's open
review items:

- `pass`: every check passed;
- `pass with warnings`: only warning-severity checks failed (shown and counted as warnings, never as FAIL);
- `fail`: an error-severity check failed;
- `refused`: a check named in contract.REFUSALS failed (the data is refused for a known reason, e.g. media
  for a text-only target: not a wrong adapter, a decision);
- `not run`: no contract result for the current spec.

Reviewers' open flags on the current spec (adapters.review.flags) make a passing verdict `pass with warnings`, as
one grouped problem line (`2 records flagged by reviewers: lost_text ×2, e.g. row 14`).

Problems are grouped one line per cause (the check), with how many and one example, so the same cause is
never listed three times. Approval needs a passing verdict for the current spec, no open REVIEW item and
no open flag; `force` (with a note) overrides all three, and `blockers()` says exactly what it overrides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from adapters.prove.contract import REFUSALS
from adapters.review.flags import group_line, resolve_hint
from catalog.untrusted import command, label_word, shell_word

if TYPE_CHECKING:
    from adapters.review.flags import Flag

Kind = Literal["pass", "pass with warnings", "fail", "refused", "not run"]
WARNING_LEVELS = {"warning", "warn"}  # anything else that fails (error, fail) is an error
INFO_LEVELS = {"info", "note"}  # reported by a check, never a reason to refuse (e.g. a field-accounting note)
_COUNTED = re.compile(r"^(\d+) problem\(s\): (.*?)(?:; |\s\(\+\d+ more\)|$)")
FLAGS_CHECK = "reviewer_flags"  # the problem reviewers' open flags make (a warning: a person's, not a check's)


@dataclass(frozen=True)
class Problem:
    """One failing check: its cause (the check's name), how many times it occurred, one example."""

    check: str
    severity: Literal["error", "warning"]
    count: int
    example: str
    summary: str = ""  # the whole line, where the cause words it better than `check: N × example`

    def line(self) -> str:
        if self.summary:
            return self.summary
        return f"{self.check}: {self.count:,} × {self.example}" if self.count > 1 else f"{self.check}: {self.example}"


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    refusal: str | None = None  # the check that refused the data, for kind == "refused"
    review_open: list[str] = field(default_factory=list)  # spec fields inference asked a person to check
    flags_open: list[dict[str, Any]] = field(default_factory=list)  # reviewers' open flags on this spec
    n_records: int = 0
    n_rows: int = 0

    @property
    def passed(self) -> bool:
        return self.kind in ("pass", "pass with warnings")

    @property
    def headline(self) -> str:
        """`pass with warnings (2 warnings) · 40 records / 40 rows`: the one line every surface shows first."""
        counts = []
        if self.errors:
            counts.append(f"{len(self.errors)} failing check{'s' if len(self.errors) != 1 else ''}")
        checks = [p for p in self.warnings if p.check != FLAGS_CHECK]
        if checks:
            counts.append(f"{len(checks)} warning{'s' if len(checks) != 1 else ''}")
        if self.flags_open:
            counts.append(f"{len(self.flags_open)} open flag{'s' if len(self.flags_open) != 1 else ''}")
        if self.review_open:
            counts.append(f"{len(self.review_open)} open review item{'s' if len(self.review_open) != 1 else ''}")
        kind = f"refused: {self.refusal}" if self.kind == "refused" else self.kind
        tail = f" · {self.n_records:,} records / {self.n_rows:,} rows" if self.kind != "not run" else ""
        return kind + (f" ({', '.join(counts)})" if counts else "") + tail

    def blockers(self) -> list[str]:
        """What stands between this adapter and an approval without --force (empty: approvable)."""
        out = []
        if self.kind == "not run":
            out.append("no contract result for the current spec")
        elif not self.passed:
            out += [p.line() for p in self.errors] or [self.headline]
        out += [f"REVIEW open: {f}" for f in self.review_open]
        out += [f"flag {f['flag_id']} open: {f['brief']}" for f in self.flags_open]
        return out

    @property
    def approvable(self) -> bool:
        return not self.blockers()

    def next_step(self, repo_id: str, status: str | None = None) -> str:
        """The one command that moves this adapter on, as every surface words it (status: the adapter's)."""
        repo = shell_word(repo_id)  # ids and review items (role_map.<label>) come from data: quoted, never code
        if status == "approved":
            ingest = command("draftset", "ingest", "--repo", repo_id)
            if self.flags_open:  # flagged after the approval: the approval stands, the finding is said first
                listed = command("draftset", "adapters", "flags", repo_id)
                return f"{len(self.flags_open)} open flag(s) since the approval: {listed}; or go on: {ingest}"
            return ingest
        if self.kind == "not run":
            return command("draftset", "adapters", "test", repo_id)
        if not self.passed:
            return f"fix the spec (draftset adapters map/edit {repo}), re-test, or reject it"
        if self.flags_open:
            return (
                f"look at the flagged records ({command('draftset', 'adapters', 'flags', repo_id)}), then "
                f"resolve each: {resolve_hint(repo_id, self.flags_open[0]['flag_id'])}"
            )
        if self.review_open:
            checked = [word for f in self.review_open for word in ("--checked", f)]
            return (
                f"look at {', '.join(label_word(f) for f in self.review_open)} (draftset adapters show {repo}), then: "
                + command("draftset", "adapters", "approve", repo_id, *checked)
            )
        return command("draftset", "adapters", "approve", repo_id)

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "passed": self.passed,
            "headline": self.headline,
            "approvable": self.approvable,
            "blockers": self.blockers(),
        }


def _severity(check: dict[str, Any]) -> str:
    # The stored check's `level` (error | warning); a stored `severity` (fail | warn), where present, wins.
    return str(check.get("severity") or check.get("level") or "error").lower()


def _problem(check: dict[str, Any], severity: Literal["error", "warning"]) -> Problem:
    detail = str(check.get("detail", ""))
    count = check.get("count")
    examples = check.get("examples")
    if isinstance(examples, list) and examples:
        first = examples[0]
        example = f"row {first.get('row_index')}: {first.get('detail', '')}" if isinstance(first, dict) else str(first)
    elif m := _COUNTED.match(detail):
        count, example = count or int(m.group(1)), m.group(2)
    else:
        example = detail
    return Problem(check=str(check.get("name", "?")), severity=severity, count=int(count or 1), example=example)


def _flags(open_flags: Sequence[Flag]) -> tuple[list[dict[str, Any]], list[Problem]]:
    if not open_flags:
        return [], []
    listed = [
        {"flag_id": f.flag_id, "row_index": f.row_index, "kind": f.kind, "by": f.flagged_by, "brief": f.brief()}
        for f in open_flags
    ]
    first = min(open_flags, key=lambda f: f.row_index)
    rows = len({f.row_index for f in open_flags})
    return listed, [Problem(FLAGS_CHECK, "warning", rows, first.brief(), summary=group_line(open_flags))]


def verdict(
    contract: dict[str, Any] | None,
    needs_review: list[str] | None = None,
    current: bool = True,
    open_flags: Sequence[Flag] = (),
) -> Verdict:
    """The verdict of a stored contract result (ContractResult.to_json()), the spec's open review items and
    the reviewers' open flags on this spec."""
    review = list(needs_review or [])
    flagged, flag_problems = _flags(open_flags)
    if not contract or not current:
        return Verdict("not run", review_open=review, flags_open=flagged)
    errors, warnings = [], []
    for c in contract.get("checks", []):
        if c.get("passed"):
            if c.get("quarantined"):  # passed because its few bad rows are quarantined: said, as a warning
                warnings.append(_problem(c, "warning"))
            continue
        level = _severity(c)
        if level in INFO_LEVELS:
            continue
        if level in WARNING_LEVELS:
            warnings.append(_problem(c, "warning"))
        else:
            errors.append(_problem(c, "error"))
    warnings += flag_problems
    refusal = next((p.check for p in errors if p.check in REFUSALS), None)
    kind: Kind = "refused" if refusal else "fail" if errors else "pass with warnings" if warnings else "pass"
    return Verdict(
        kind,
        errors,
        warnings,
        refusal,
        review,
        flagged,
        n_records=int(contract.get("n_records", 0)),
        n_rows=int(contract.get("n_rows", 0)),
    )


def rejected_by_cause(contract: dict[str, Any]) -> list[tuple[str, int, str]]:
    """Rejected sample rows, one line per cause: (cause, rows, one example `row N field: reason`).

    The contract counts every rejected row by cause (`reject_reasons`, its reason's fixed part) and lists the
    first few; each listed row is the example of the cause its reason starts with."""
    counts: dict[str, int] = dict(contract.get("reject_reasons") or {})
    examples: dict[str, str] = {}
    for q in contract.get("quarantined", []):
        reason = str(q["reason"])
        cause = next((c for c in sorted(counts, key=len, reverse=True) if reason.startswith(c)), None)
        if cause is None:  # malformed rows and unexpected errors keep the reader's or library's own text
            cause = "malformed" if "malformed" in counts and q["field"] == "<row>" else "unexpected_error"
        examples.setdefault(cause, f"row {q['row_index']} {q['field']}: {reason[:100]}")
    return [(c, n, examples.get(c, "")) for c, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n]


def of_record(record: Any) -> Verdict:
    """The verdict of a stored adapter (adapters.review.store.AdapterRecord)."""
    return verdict(record.contract, record.spec.needs_review, record.contract_current, record.open_flags)


def approval_word(found: dict[str, Any], status: str) -> str:
    """Whether the adapter can be approved now, from a verdict's JSON (`Verdict.to_json`, as the API sends
    it) and the adapter's status: `approved`, `ready`, or `blocked: ...` from the verdict's own blockers; a
    passing verdict with an open REVIEW item or flag is `blocked`, never a bare "pass" that `approve` refuses."""
    if status == "approved":
        return "approved"
    blockers = list(found.get("blockers") or [])
    if not blockers:
        return "ready"
    review = sum(b.startswith("REVIEW open") for b in blockers)
    flagged = sum(b.startswith("flag ") for b in blockers)
    parts = [f"{review} REVIEW"] * bool(review) + [f"{flagged} flag(s)"] * bool(flagged)
    parts += ["contract"] * (len(blockers) > review + flagged)
    return "blocked: " + ", ".join(parts)
