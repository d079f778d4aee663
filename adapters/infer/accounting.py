"""Field-level accounting: for every leaf of the raw rows, where it went in the canonical record.

"Not one character lost without a count", at field level. Every leaf path of the sampled rows
(`instruction`, `conversations[].value`, `meta.score`) is either carried into the record (as whose text,
a role label, a tool call, reasoning, ...) or dropped by a named decision in the spec (`drop:`). A field
holding substantial text that is neither fails the contract with one line naming it and an example.

"Where it went" is traced, not guessed from names (adapters/map/tracing.py: each field path is replaced by a
marker in a copy of a row and the row applied again). Text containment is the cross-check for unread fields
(adapters/infer/field_kinds.py): one whose text is already carried (a rendered copy of the turns) is a duplicate,
nothing is lost. Tracing stops after a few rows per path, so its cost stays flat with the sample size.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from pydantic import BaseModel, ConfigDict

from adapters.infer.field_kinds import (
    SHORT,
    coverage,
    kind_of,
    metadata_reason,
    prose,
    substantial,
    value_reason,
    words,
)
from adapters.map.tracing import (
    STRUCTURE,
    UNREAD,
    Tracer,
    decoded_row,
    leaves,
    locations,
    parsed_into,
    probe_value,
    replace_at,
    split_path,
)
from adapters.read import encoded
from adapters.spec import AdapterSpec

PROBES_PER_PATH = 4  # traced rows per field path: enough to see where it goes, flat cost per dataset
DROP_ROWS = 200  # rows a proposal looks at to name metadata: a field seen only later is left to the contract
SHAPE_ROWS = 200  # rows per path whose values are judged for shape (words, distinct values)
MAX_PATHS = 300  # a row whose keys are data (a dict used as a map) would otherwise explode
DUPLICATE_COVERAGE = 0.95  # an unread field whose text is (almost) all inside the record is a duplicate
DUPLICATE_MIN = 20  # chars: a shorter value found inside the record proves nothing ("en" is in every text)
DUPLICATE = "duplicate of carried text"


class FieldReport(BaseModel):
    """One row of the accounting table."""

    model_config = ConfigDict(extra="forbid")
    path: str
    kind: str  # text | number | boolean
    rows: int  # sampled rows that had the field (non-empty)
    mean_chars: float
    median_chars: float
    share: float  # of all the sampled rows' text
    where: list[str]  # destinations seen while tracing, most frequent first
    status: str  # carried | dropped | duplicate | unaccounted | minor (not text, short or metadata)
    reason: str = ""  # the spec's drop reason, or why it is not a problem
    example: str = ""
    samples: list[str] = []  # a few values, for the proposal's metadata decisions
    held: str = ""  # how the value is held encoded ("JSON string", "gzip blob (base64)"); judged decoded


@dataclass
class _Stat:
    kind: str
    rows: int = 0
    lengths: list[int] = field(default_factory=list)
    where: Counter[str] = field(default_factory=Counter)
    probes: int = 0
    traced: int = 0
    covered: list[float] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)  # the longest value of the first rows that had it
    held: str = ""  # "JSON string", "zlib blob (base64)": judged by what it decodes to
    distinct: set[int] = field(default_factory=set)  # hashes of per-row values: labels repeat, text does not
    words: list[int] = field(default_factory=list)


def _under(path: str, name: str) -> bool:
    return path == name or path.startswith(name + ".") or path.startswith(name + "[]")


def dropped_by(spec: AdapterSpec, path: str) -> str | None:
    """The spec's reason for leaving `path` out: it (or a path above it) is named under `drop:`, or another
    decision of the spec leaves it out by name (candidate answers under the `regenerate` policy)."""
    for name, why in (spec.drop or {}).items():
        if _under(path, name):
            return why
    cands = spec.candidates
    if cands is not None and cands.policy == "regenerate":
        for name in (n for n in [cands.field, *cands.sides, cands.winner_field] if n):
            if _under(path, name):
                return "candidates.policy regenerate: the target answers the prompt, no candidate is trained"
    return None


def account(spec: AdapterSpec, rows: list[tuple[int, Any]]) -> list[FieldReport]:
    """The accounting table of `spec` over sampled (row_index, row) pairs, biggest text first."""
    tracer = Tracer(spec)
    stats: dict[str, _Stat] = {}
    total_chars = 0
    pid = 0
    for index, raw in rows:
        row = decoded_row(spec, raw) if isinstance(raw, dict) else None
        if row is None:
            continue
        per_path: dict[str, int] = {}
        kinds: dict[str, str] = {}
        examples: dict[str, str] = {}
        values: dict[str, list[str]] = {}
        holds: dict[str, str] = {}  # path → how its value is held encoded (adapters/read/encoded.py)
        for path, value in leaves(row):  # one walk per row: the probes below reuse `values`
            if path not in stats and len(stats) >= MAX_PATHS:
                continue
            if isinstance(value, str) and (held := encoded.decode(value)) is not None:
                how, inner = held
                if encoded.empty(inner):
                    continue  # `"[]"`, `{}`: the row holds nothing in this field
                text = "\n".join(encoded.texts(inner))
                if text:  # judged by the text it decodes to, not by its JSON syntax or base64 letters
                    value = text
                    holds.setdefault(path, how)
            size = len(value) if isinstance(value, str) else 0
            per_path[path] = per_path.get(path, 0) + size
            kinds.setdefault(path, kind_of(value))
            if isinstance(value, str):
                values.setdefault(path, []).append(value)
                if len(value) > len(examples.get(path, "")):
                    examples[path] = value
        for path, size in per_path.items():
            st = stats.setdefault(path, _Stat(kinds[path]))
            st.held = st.held or holds.get(path, "")
            st.rows += 1
            st.lengths.append(size)
            total_chars += size
            if path in examples and len(st.samples) < 5:
                st.samples.append(examples[path])
            if path in values and len(st.words) < SHAPE_ROWS:  # a value's shape needs a few hundred rows
                joined = "\n".join(values[path])
                st.distinct.add(hash(joined))
                st.words.append(words(joined))
        todo = [p for p in per_path if stats[p].probes < PROBES_PER_PATH]
        if not todo:
            continue
        base = tracer.apply(index, row)
        if all(b is None for b in base):
            continue  # a row the adapter rejects: quarantined by the contract, nothing to trace here
        for path in todo:
            stats[path].probes += 1
        carried_text = "\n".join(t for recs in base for rec in recs or [] for _, _, t in locations(rec))
        for path in todo:
            st = stats[path]
            pid += 1
            counter = [0]
            probed_row = replace_at(row, split_path(path), 0, lambda v, p=pid, c=counter: probe_value(v, p, c))
            where = tracer.destinations(path, pid, base, tracer.apply(index, probed_row))
            st.traced += 1
            if where & {UNREAD, STRUCTURE} and st.kind == "text":
                text = "\n".join(values.get(path, []))
                if STRUCTURE in where:
                    where = {f"{d} (parsed)" for d in parsed_into(text, base)} or where
                elif len(text) >= DUPLICATE_MIN:
                    st.covered.append(coverage(text, carried_text))
            st.where.update(where)
    return _reports(spec, stats, total_chars)


def _reports(spec: AdapterSpec, stats: dict[str, _Stat], total_chars: int) -> list[FieldReport]:
    out = []
    for path, st in stats.items():
        med = float(median(st.lengths)) if st.lengths else 0.0
        share = sum(st.lengths) / total_chars if total_chars else 0.0
        carried = [w for w, _ in st.where.most_common() if w != UNREAD]
        why = dropped_by(spec, path)
        if carried:
            status, reason = "carried", ""
        elif why is not None:
            status, reason = "dropped", why
        elif not st.traced:
            status, reason = "untraced", "every row that has it is rejected by the adapter"
        elif why is not None:
            status, reason = "dropped", why
        elif st.kind != "text":
            status, reason = "minor", f"a {st.kind}: not text"
        elif st.covered and median(st.covered) >= DUPLICATE_COVERAGE:
            status, reason = "duplicate", f"{median(st.covered):.0%} of its text is carried by other fields"
        elif (
            (substantial(med, share) or _distinct_prose(st, med)) and prose(st.samples) and not value_reason(st.samples)
        ):
            status, reason = "unaccounted", ""
        elif value_reason(st.samples):
            status, reason = "minor", f"metadata ({value_reason(st.samples)})"
        else:
            status, reason = "minor", f"short values (median {med:.0f} chars)"
        out.append(
            FieldReport(
                path=path,
                kind=st.kind,
                rows=st.rows,
                mean_chars=round(sum(st.lengths) / len(st.lengths), 1) if st.lengths else 0.0,
                median_chars=med,
                share=round(share, 4),
                where=carried or ([DUPLICATE] if status == "duplicate" else [UNREAD] if st.traced else ["not traced"]),
                status=status,
                reason=reason,
                example=max(st.samples, key=len, default="")[:120],
                samples=[v[:80] for v in st.samples],
                held=st.held,
            )
        )
    return sorted(out, key=lambda r: (-r.share, r.path))


def _distinct_prose(st: _Stat, median_chars: float) -> bool:
    """Short but real text: a few words, different on most rows (a moved half-sentence), not a label column."""
    many = len(st.distinct) >= 0.5 * len(st.words)
    return median_chars >= SHORT and bool(st.words) and median(st.words) >= 3 and many and st.rows >= 3


def proposed_drops(spec: AdapterSpec, rows: list[tuple[int, Any]]) -> dict[str, str]:
    """`drop:` decisions a proposal makes: unread fields that are metadata or short values, with the reason.

    Substantial unread text is never dropped here: it fails the contract so a person decides."""
    drops = {}
    for r in account(spec, rows[:DROP_ROWS]):
        if r.status != "minor":
            continue
        why = metadata_reason(r.path, r.samples)
        if why is None:
            why = (
                f"{r.kind} values"
                if r.kind != "text"
                else f"metadata (short values, median {r.median_chars:.0f} chars)"
            )
        drops[r.path] = why
    return dict(sorted(drops.items()))


def unaccounted_lines(reports: list[FieldReport]) -> list[str]:
    """One line per unaccounted field: what it is, how much text, an example, how to fix it."""
    return [
        f"field {r.path!r} ({r.rows} rows, {_held(r)}median {r.median_chars:.0f} chars, {r.share:.0%} of the text) "
        "is neither "
        f"mapped nor dropped: e.g. {r.example[:60]!r}; map it, or name it under `drop:` with a reason"
        for r in reports
        if r.status == "unaccounted"
    ]


def _held(r: FieldReport) -> str:
    return f"a {r.held} decoded to text, " if r.held else ""
