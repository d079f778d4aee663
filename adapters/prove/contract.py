"""Contract tests: apply a spec to sampled raw rows and prove what the mapping did.

Each check has a stable name, a level (`error` fails the contract, `warning` is shown and stored), a
one-line detail, why it exists and example rows. Zero records from non-empty input always fails; an
unmapped role label fails naming the label and its count; so does an empty sample. Rows the adapter
rejects are listed (row index, field, reason) exactly as ingest will quarantine them.

Beyond the rows the adapter rejects, every record passes the per-record plausibility checks
(adapters/prove/plausibility.py: system turns mid-conversation, impossible role sequences, markup left in
content, ...). A few records failing them are quarantined and counted, as ingest will; the contract
fails only when they pass the spec's `max_bad_fraction` (default 1%). And every raw field is accounted
for (adapters/infer/accounting.py): substantial text neither mapped nor dropped by name fails the contract.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from adapters.infer.accounting import FieldReport, account, unaccounted_lines
from adapters.infer.answer_head import split_answer_problems
from adapters.infer.continuation import continuation, continued_columns
from adapters.map.apply import RowError, RowMapper, role_labels
from adapters.prove.plausibility import (
    RECORD_CHECKS,
    WHY,
    dataset_problems,
    prompt_column_labels,
    record_problems,
    unstated_task,
)
from adapters.prove.text_checks import OK as TEXT_OK
from adapters.prove.text_checks import WHY as TEXT_WHY
from adapters.prove.text_checks import text_problems
from adapters.read.source import RawRow
from adapters.records import Conversation
from adapters.spec import AdapterSpec
from catalog.untrusted import command, is_plain, label_word

MAX_LISTED = 50  # quarantine entries kept in the result; counts always cover every row
PATTERN_ROWS = 300  # rows the sample-wide patterns (swapped columns, repeated prompts) are judged on
DEFAULT_BAD_FRACTION = 0.01  # records failing a per-record check tolerated (quarantined) up to this share


def bad_fraction(spec: AdapterSpec) -> float:
    """The share of rows failing a per-record check that the spec tolerates: the contract's sample and ingest
    (pipeline/ingest/tolerance.py) both fail a dataset past it."""
    return DEFAULT_BAD_FRACTION if spec.max_bad_fraction is None else spec.max_bad_fraction


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    passed: bool
    detail: str
    # "warning": shown and stored, but does not fail the contract (e.g. calls to undeclared tools).
    level: Literal["error", "warning"] = "error"
    why: str = ""  # what the check guards against
    count: int = 0  # rows with the problem (per-record checks; 0 when it passed clean)
    examples: list[dict[str, Any]] = Field(default_factory=list)  # [{row_index, detail}] (a few)
    quarantined: bool = False  # passed because its rows are quarantined within the tolerance

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, data: Any) -> Any:
        # `severity` is derived, stored for readers of the JSON; a stored result reads back without it
        return {k: v for k, v in data.items() if k != "severity"} if isinstance(data, dict) else data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def severity(self) -> Literal["pass", "warn", "fail"]:
        """`fail` | `warn` | `pass`: what a one-verdict reader needs (a quarantining check warns)."""
        if self.passed:
            return "warn" if self.quarantined else "pass"
        return "fail" if self.level == "error" else "warn"


# Named refusals: a failing check of this name means "refused for a known reason", not "wrong".
REFUSALS = ("media",)


class ContractResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    passed: bool
    spec_hash: str
    revision: str
    n_rows: int
    n_malformed: int
    n_rejected: int
    n_records: int
    yield_: float = Field(alias="yield")
    checks: list[Check]
    role_counts: dict[str, int]
    reject_reasons: dict[str, int]
    quarantined: list[dict[str, Any]]
    verdict: str = Field("", description="pass | refused: <reason> | fail")
    # Records that failed a per-record check: quarantined (by check name) like rejected rows.
    n_flagged: int = 0
    flagged: dict[str, int] = Field(default_factory=dict)
    max_bad_fraction: float = DEFAULT_BAD_FRACTION
    fields: list[FieldReport] = Field(default_factory=list, description="field accounting, biggest text first")
    problems: list[dict[str, Any]] = Field(
        default_factory=list, description="one entry per cause: {cause, count, level, example}"
    )

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed and c.level == "error"]

    def summary(self) -> str:
        """One line: the verdict and the failing checks."""
        failed = self.failures()
        tail = "; ".join(f"{c.name}: {c.detail}" for c in failed[:3])
        return f"{self.verdict} ({self.n_records} records / {self.n_rows} rows)" + (f": {tail}" if tail else "")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _check(name: str, bad: list[str], ok: str) -> Check:
    if not bad:
        return Check(name=name, passed=True, detail=ok, why=WHY.get(name, ""))
    more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
    return Check(
        name=name, passed=False, detail=f"{len(bad)} problem(s): " + "; ".join(bad[:3]) + more, why=WHY.get(name, "")
    )


def _golden(spec: AdapterSpec) -> Check:
    bad = []
    fresh = RowMapper(spec)
    for g in spec.golden:
        try:
            got: list[dict[str, Any]] | None = [r.model_dump(mode="json") for r in fresh.apply(g.row_index, g.row)]
            error = None
        except RowError as exc:
            got, error = None, str(exc)
        if got != g.expected or error != g.expected_error:
            bad.append(f"row {g.row_index} no longer gives its pinned output" + (f" (now: {error})" if error else ""))
    return _check("golden", bad, f"{len(spec.golden)} pinned example(s) match")


OK_DETAIL = {
    "content": "no null, empty or non-string content in any record",
    "regenerate_cut": "every context ends on a user turn",
    "native_trainable": "every record ends on a trainable assistant turn",
    "nesting": "no serialised turn lists left in content",
    "tool_arguments": "every tool call's arguments are a JSON object",
    "tool_links": "every tool turn answers an earlier call",
    "observations": "every tool result follows the step that called it",
    "preference": "no rejected answer is trained",
    "preference_prompt": "both sides of every pair answer the same prompt",
    "label": "no answer labelled undesirable is trained",
    "media": "no media dropped unseen",
    "system_position": "system turns only open conversations",
    "role_sequence": "every assistant turn answers a user or tool turn",
    "markup": "no template markup or wrapper tags left in content",
    "duplicate_turns": "no text repeated between two turns of a record",
}


def run_contract(spec: AdapterSpec, rows: Iterable[RawRow]) -> ContractResult:
    """Apply `spec` to `rows` (a sample) and run every check."""
    mapper = RowMapper(spec)
    records: list[Conversation] = []
    roles: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    quarantined: list[dict[str, Any]] = []
    raw: list[RawRow] = []
    for r in rows:
        raw.append(r)
        if r.error is not None:
            reasons["malformed"] += 1
            entry = {"row_index": r.row_index, "field": "<row>", "reason": r.error}
        else:
            roles.update(role_labels(spec, r.row))
            try:
                records += mapper.apply(r.row_index, r.row)
                continue
            except RowError as exc:
                # Count by the reason's fixed part: quoted labels and "(…)" sizes would split one cause.
                reasons[exc.reason.split(" '")[0].split(" (")[0]] += 1
                entry = {"row_index": r.row_index, "field": exc.field, "reason": exc.reason}
            except Exception as exc:  # noqa: BLE001 - a library failing on one hostile row rejects that row only
                reasons["unexpected_error"] += 1
                entry = {"row_index": r.row_index, "field": "<row>", "reason": f"{type(exc).__name__}: {exc}"[:300]}
        if len(quarantined) < MAX_LISTED:
            quarantined.append(entry)

    n_rows, n_records = len(raw), len(records)
    n_malformed = reasons["malformed"]
    ratio = n_records / n_rows if n_rows else 0.0
    checks = [
        Check(
            name="input",
            passed=n_rows > 0,
            detail=f"{n_rows} rows read" if n_rows else "0 rows read: the dataset (or this split) is empty",
        ),
        Check(
            name="yield",
            passed=n_records > 0 and ratio >= spec.min_yield,
            detail=f"{n_records} records from {n_rows} rows = {ratio:.2f} per row (need ≥ {spec.min_yield:.2f}); "
            f"{n_malformed} malformed, {sum(reasons.values()) - n_malformed} rejected by the adapter",
        ),
    ]
    if spec.layout != "columns":
        unmapped = {label: n for label, n in roles.most_common() if label not in spec.role_map}
        checks.append(
            _check(
                "roles_mapped",
                [
                    # the command comes last, unwrapped: a label may hold backticks, so no delimiter is safe
                    f"unmapped role label {repr(label) if is_plain(label) else label_word(label)} ({n} turns); "
                    "map it (ROLE: system, user, assistant, tool or drop) with: "
                    + command("draftset", "adapters", "map", spec.source.repo_id, label_word(label) + "=ROLE")
                    for label, n in unmapped.items()
                ],
                f"all {len(roles)} role labels mapped: {dict(roles)}",
            )
        )
    good = [(r.row_index, r.row) for r in raw if r.error is None]
    fields = account(spec, good)
    checks.append(
        _check(
            "fields",
            unaccounted_lines(fields),
            f"every raw field carried or dropped by name ({sum(f.status == 'carried' for f in fields)} carried, "
            f"{sum(f.status != 'carried' for f in fields)} left out)",
        )
    )
    tolerance = bad_fraction(spec)
    flagged_checks, flagged_rows, undeclared = _record_checks(spec, records, n_rows, tolerance)
    checks += flagged_checks
    for f in flagged_rows:
        if len(quarantined) < MAX_LISTED:
            quarantined.append(f)
    checks += _dataset_checks(spec, raw, records)
    checks.append(
        _check(
            "tools_declared",
            [f"calls {name!r} that `tools` does not declare ({n} calls)" for name, n in undeclared.most_common()],
            "every called tool is declared in `tools`",
        ).model_copy(update={"level": "warning"})
    )
    refused_media = reasons.get("media", 0)
    if refused_media:
        media = next(c for c in checks if c.name == "media")
        media.passed, media.quarantined = False, False
        media.detail = (
            f"{refused_media} of {n_rows} rows carry media: refused for a text-only target "
            "(set media.policy: keep for a multimodal target)" + ("" if media.count == 0 else f"; {media.detail}")
        )
    first = [(c.id, c.content_hash()) for c in records]
    second = RowMapper(spec)  # a fresh compile: catches state leaking between rows or mappers
    again = [(c.id, c.content_hash()) for r in raw if r.error is None for c in _quiet_apply(second, r)]
    checks.append(
        Check(
            name="deterministic",
            passed=again == first,
            detail="a second application gave identical record hashes"
            if again == first
            else "a second application of the same rows gave different records",
        )
    )
    checks.append(_golden(spec))
    passed = all(c.passed for c in checks if c.level == "error")
    failed_names = [c.name for c in checks if not c.passed and c.level == "error"]
    refusal = next((name for name in REFUSALS if name in failed_names), None)
    verdict = "pass" if passed else f"refused: {refusal}" if refusal else "fail"
    flagged = Counter(f["check"] for f in flagged_rows)
    return ContractResult(
        passed=passed,
        verdict=verdict,
        spec_hash=spec.spec_hash(),
        revision=spec.source.revision,
        n_rows=n_rows,
        n_malformed=n_malformed,
        n_rejected=sum(reasons.values()) - n_malformed,
        n_records=n_records,
        **{"yield": round(ratio, 4)},
        checks=checks,
        role_counts=dict(roles),
        reject_reasons=dict(reasons),
        quarantined=quarantined,
        n_flagged=len({f["row_index"] for f in flagged_rows}),
        flagged=dict(flagged),
        max_bad_fraction=tolerance,
        fields=fields,
        problems=_grouped(reasons, quarantined, checks),
    )


def _record_checks(
    spec: AdapterSpec, records: list[Conversation], n_rows: int, tolerance: float
) -> tuple[list[Check], list[dict[str, Any]], Counter[str]]:
    """One check per per-record plausibility rule; within the tolerance its rows are quarantined, not failed."""
    by_check: dict[str, list[tuple[int, str]]] = {name: [] for name in RECORD_CHECKS}
    undeclared: Counter[str] = Counter()
    bad_rows: set[int] = set()
    for rec in records:
        problems, calls = record_problems(rec)
        undeclared.update(calls)
        for name, detail in problems:
            by_check[name].append((rec.source.row_index, detail))
            bad_rows.add(rec.source.row_index)
    tolerated = len(bad_rows) <= tolerance * n_rows
    system_labels = [label for label, role in spec.role_map.items() if role == "system"]
    checks, flagged = [], []
    for name in RECORD_CHECKS:
        if (
            name == "regenerate_cut"
            and spec.mode != "regenerate"
            or name == "native_trainable"
            and spec.mode != "native"
        ):
            continue
        hits = by_check[name]
        rows = sorted({i for i, _ in hits})
        examples = [{"row_index": i, "detail": d} for i, d in hits[:3]]
        if not hits:
            ok = OK_DETAIL[name] + (" (pairs recorded)" if name == "preference" and spec.preference else "")
            checks.append(Check(name=name, passed=True, detail=ok, why=WHY[name]))
            continue
        detail = "; ".join(f"row {e['row_index']} {e['detail']}" for e in examples)
        if name == "system_position" and system_labels:
            detail += f" (labels mapped to system: {system_labels}; one that answers the user is not a system turn)"
        share = f"{len(rows)} of {n_rows} rows"
        checks.append(
            Check(
                name=name,
                passed=tolerated,
                quarantined=tolerated,
                detail=(
                    f"{share} quarantined (within the {tolerance:.0%} tolerance): {detail}"
                    if tolerated
                    else f"{share}: {detail}"
                ),
                why=WHY[name],
                count=len(rows),
                examples=examples,
            )
        )
        flagged += [{"row_index": i, "field": "<record>", "reason": f"{name}: {d}", "check": name} for i, d in hits]
    if not tolerated and bad_rows:
        over = f"{len(bad_rows)} of {n_rows} rows fail a per-record check, over the {tolerance:.0%} tolerance"
        for c in checks:
            if not c.passed:
                c.detail = f"{c.detail} [{over}]"
    return checks, flagged, undeclared


def _dataset_checks(spec: AdapterSpec, raw: list[RawRow], records: list[Conversation]) -> list[Check]:
    """Sample-wide patterns, judged on the records as native data (a regenerate spec keeps no answers)."""
    view = records
    if spec.mode == "regenerate":
        # labels and preferences only decide what is trained: the view keeps every answer to look at
        native = RowMapper(spec.model_copy(update={"mode": "native", "label_field": None}))
        # a pattern over many rows shows in a few hundred: the view need not re-apply the whole sample
        view = [c for r in raw[:PATTERN_ROWS] if r.error is None for c in _quiet_apply(native, r)] or records
    found = {
        p["name"]: p
        for p in dataset_problems(view)
        + prompt_column_labels(spec, raw)
        + unstated_task(spec, view)
        + _split_prompts(spec, raw)
        + split_answer_problems(spec, raw)
        + text_problems(view, answers_trained=spec.mode == "native")
    }
    out = []
    for name, ok in (
        ("prompt_label_like", "prompts vary like requests, not like a label column"),
        ("prompt_column_label", "no prompt column is a one-word category label"),
        ("answer_shorter", "answers are not systematically shorter than their prompts"),
        ("answer_repeated", "answers vary from row to row"),
        ("prompt_unasked", "prompts state their task"),
        ("prompt_split", "no prompt column is joined mid-sentence"),
        ("answer_split", "no prompt column holds the opening of the answer"),
        *TEXT_OK.items(),
    ):
        p = found.get(name)
        out.append(
            Check(
                name=name,
                passed=p is None,
                level=p["level"] if p else "error",
                detail=p["detail"] if p else ok,
                why=WHY.get(name) or TEXT_WHY[name],
                count=p.get("count", len(p["rows"])) if p else 0,
                examples=[{"row_index": i, "detail": ""} for i in p["rows"]] if p else [],
            )
        )
    return out


def _split_prompts(spec: AdapterSpec, raw: list[RawRow]) -> list[dict[str, Any]]:
    """Prompt columns joined with a blank line where, on most rows, the second carries on the sentence the first
    left open: one text split over two fields (`columns.continues` joins it with a space, as inference does)."""
    cols = spec.columns if spec.layout == "columns" else None
    if cols is None:
        return []
    rows = [r.row for r in raw if r.error is None and isinstance(r.row, dict)]
    split = [c for c in continued_columns(rows, cols.prompt) if c not in cols.continues]
    if not split:
        return []
    carried, both = continuation(rows, cols.prompt[cols.prompt.index(split[0]) - 1], split[0])
    return [
        {
            "name": "prompt_split",
            "level": "error",
            "detail": f"prompt column {split[0]!r} continues the sentence of the column before it in {carried}/{both} "
            "rows, but is joined with a blank line: list it under columns.continues",
            "rows": [],
        }
    ]


def _grouped(reasons: Counter[str], quarantined: list[dict[str, Any]], checks: list[Check]) -> list[dict[str, Any]]:
    """One line per cause (a reject reason, a failing or quarantining check) with its count and an example."""
    out = []
    for reason, n in reasons.most_common():
        example = next((q for q in quarantined if q["reason"].startswith(reason) or reason == "malformed"), None)
        out.append(
            {
                "cause": f"rejected: {reason}",
                "count": n,
                "level": "quarantine",
                "example": f"row {example['row_index']} {example['field']}: {example['reason'][:100]}"
                if example
                else "",
            }
        )
    for c in checks:
        if c.passed and not c.quarantined:
            continue
        ex = c.examples[0] if c.examples else None
        out.append(
            {
                "cause": c.name,
                "count": c.count,
                "level": c.severity,
                "example": f"row {ex['row_index']} {ex['detail']}" if ex else c.detail[:140],
            }
        )
    return out


def _quiet_apply(mapper: RowMapper, r: RawRow) -> list[Conversation]:
    try:
        return mapper.apply(r.row_index, r.row)
    except Exception:  # noqa: BLE001 - counted as a rejection in the first pass already
        return []
