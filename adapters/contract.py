"""Contract tests: apply a spec to sampled raw rows and check what the field taught us to check.

Each check is pass/fail with a one-line detail. Zero records from non-empty input always fails; an
unmapped role label fails naming the label and its count; so does an empty sample. Rows the adapter
rejects are listed (row index, field, reason) exactly as ingest will quarantine them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.apply import RowError, RowMapper, role_labels
from adapters.records import Conversation
from adapters.source import RawRow
from adapters.spec import AdapterSpec
from catalog import limits
from catalog.untrusted import command, is_plain, label_word

MAX_LISTED = 50
MEDIA_MARK = re.compile(
    r"<(image|audio|video)>"
)  # quarantine entries kept in the result; counts always cover every row


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    passed: bool
    detail: str
    # "warning": shown and stored, but does not fail the contract (e.g. calls to undeclared tools).
    level: Literal["error", "warning"] = "error"


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

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed and c.level == "error"]

    def summary(self) -> str:
        """One line: the verdict and the failing checks."""
        failed = self.failures()
        tail = "; ".join(f"{c.name}: {c.detail}" for c in failed[:3])
        return f"{self.verdict} ({self.n_records} records / {self.n_rows} rows)" + (f": {tail}" if tail else "")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _looks_nested(content: str) -> bool:
    """Content that is itself a serialised turn list / object: a JSON field that was never decoded."""
    text = content.lstrip()
    if not text.startswith(("[{", "{")):
        return False
    try:
        value = limits.loads_limited(text)
    except limits.LimitExceeded:
        return False
    items = value if isinstance(value, list) else [value]
    return any(isinstance(v, dict) and ({"role", "from"} & v.keys()) for v in items)


def _arguments_object(arguments: str) -> bool:
    try:
        return isinstance(limits.loads_limited(arguments), dict)
    except limits.LimitExceeded:
        return False


def _tool_problems(rec: Conversation, where: str, found: dict[str, list[str]]) -> None:
    """Calls parse, every tool turn answers an earlier call right after its step, calls are declared."""
    declared = {t.function.name for t in rec.tools or []}
    seen: set[str] = set()
    prev = None
    for i, m in enumerate(rec.messages):
        for c in m.tool_calls or []:
            seen.add(c.id)
            if not _arguments_object(c.function.arguments):
                found["tool_arguments"].append(
                    f"{where} messages[{i}] call {c.function.name!r}: arguments are not a JSON object"
                )
            if c.function.name not in declared:
                found["tools_declared"].append(f"{where} calls {c.function.name!r} that `tools` does not declare")
        if m.role == "tool":
            if m.tool_call_id is None or m.tool_call_id not in seen:
                found["tool_links"].append(f"{where} messages[{i}] tool turn answers no earlier call")
            elif prev is None or not (prev.role == "tool" or (prev.role == "assistant" and prev.tool_calls)):
                found["observations"].append(
                    f"{where} messages[{i}] tool result is not attached to the step that called it"
                )
        prev = m


def _problems(records: list[Conversation], mode: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {
        k: []
        for k in (
            "content",
            "cut",
            "trainable",
            "nesting",
            "tool_arguments",
            "tool_links",
            "observations",
            "tools_declared",
            "preference",
            "label",
            "media",
        )
    }
    for rec in records:
        where = f"row {rec.source.row_index}"
        for i, m in enumerate(rec.messages):
            if not m.content.strip() and not m.tool_calls and not m.parts:  # the model already makes it a str
                found["content"].append(f"{where} messages[{i}] ({m.role}) has empty content")
            elif _looks_nested(m.content):
                found["nesting"].append(f"{where} messages[{i}] content is a serialised turn list")
            if not m.parts and MEDIA_MARK.search(m.content):
                found["media"].append(f"{where} messages[{i}] has a media placeholder but no media part")
        _tool_problems(rec, where, found)
        if mode == "regenerate" and rec.messages[-1].role != "user":
            found["cut"].append(f"{where} context ends on {rec.messages[-1].role}")
        last = rec.messages[-1]
        if mode == "native" and not (last.role == "assistant" and last.train):
            found["trainable"].append(f"{where} does not end on a trainable assistant turn")
        if rec.preference and any(m.train for m in rec.preference.rejected):
            found["preference"].append(f"{where} trains a rejected answer")
        if rec.label is False and any(m.train for m in rec.messages):
            found["label"].append(f"{where} trains an answer labelled undesirable")
    return found


def _check(name: str, bad: list[str], ok: str) -> Check:
    if not bad:
        return Check(name=name, passed=True, detail=ok)
    more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
    return Check(name=name, passed=False, detail=f"{len(bad)} problem(s): " + "; ".join(bad[:3]) + more)


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
                    f"unmapped role label {repr(label) if is_plain(label) else label_word(label)} ({n} turns): map it with `"
                    + command("draftset", "adapters", "map", spec.source.repo_id, label_word(label) + "=ROLE")
                    + "` (ROLE: system, user, assistant, tool or drop)"
                    for label, n in unmapped.items()
                ],
                f"all {len(roles)} role labels mapped: {dict(roles)}",
            )
        )
    found = _problems(records, spec.mode)
    checks.append(_check("content", found["content"], "no null, empty or non-string content in any record"))
    if spec.mode == "regenerate":
        checks.append(_check("regenerate_cut", found["cut"], "every context ends on a user turn"))
    else:
        checks.append(_check("native_trainable", found["trainable"], "every record ends on a trainable assistant turn"))
    checks.append(_check("nesting", found["nesting"], "no serialised turn lists left in content"))
    checks.append(_check("tool_arguments", found["tool_arguments"], "every tool call's arguments are a JSON object"))
    checks.append(_check("tool_links", found["tool_links"], "every tool turn answers an earlier call"))
    checks.append(_check("observations", found["observations"], "every tool result follows the step that called it"))
    declared = _check("tools_declared", found["tools_declared"], "every called tool is declared in `tools`")
    checks.append(declared.model_copy(update={"level": "warning"}))
    checks.append(
        _check(
            "preference",
            found["preference"],
            "no rejected answer is trained" + (" (pairs recorded)" if spec.preference else ""),
        )
    )
    checks.append(_check("label", found["label"], "no answer labelled undesirable is trained"))
    refused_media = reasons.get("media", 0)
    media_bad = found["media"] + (
        [
            f"{refused_media} of {n_rows} rows carry media: refused for a text-only target "
            "(set media.policy: keep for a multimodal target)"
        ]
        if refused_media
        else []
    )
    checks.append(_check("media", media_bad, "no media dropped unseen"))
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
    )


def _quiet_apply(mapper: RowMapper, r: RawRow) -> list[Conversation]:
    try:
        return mapper.apply(r.row_index, r.row)
    except Exception:  # noqa: BLE001 - counted as a rejection in the first pass already
        return []
