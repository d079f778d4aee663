"""Field-level accounting: for every leaf of the raw rows, where it went in the canonical record.

"Not one character lost without a count", at field level. Every leaf path of the sampled rows
(`instruction`, `conversations[].value`, `meta.score`) is either carried into the record (as whose text,
a role label, a tool call, reasoning, ...) or dropped by a named decision in the spec (`drop:`). A field
holding substantial text that is neither fails the contract with one line naming it and an example.

"Where it went" is traced, not guessed from names: each field path is replaced, in a copy of a sampled
row, by a unique marker (strings) or a changed value (numbers, booleans), the row is applied again, and
the marker is looked for in the output. Found at messages[i].content → "assistant text"; not found but
the output changed or the row was refused → the field shapes the record (a role label, a flag); the
output unchanged → the applier never read it. Regenerate-mode specs are traced as native too, so an
answer column reads "assistant text (regenerated)" rather than "unread". Text containment is the
cross-check for unread fields: one whose text is already carried (a rendered copy of the turns) is a
duplicate, nothing is lost. Tracing stops after a few rows per path, so its cost stays flat with the
sample size.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from pydantic import BaseModel, ConfigDict

from adapters.apply import RowMapper
from adapters.markup import fragments
from adapters.records import Conversation
from adapters.row_fields import decode_json_field
from adapters.spec import AdapterSpec

PROBES_PER_PATH = 4  # traced rows per field path: enough to see where it goes, flat cost per dataset
MAX_PATHS = 300  # a row whose keys are data (a dict used as a map) would otherwise explode
SUBSTANTIAL_MEDIAN = 40  # chars: a field whose median value is this long holds text, not a label
SUBSTANTIAL_SHARE = 0.05  # ... or this share of all the rows' text, with values at least SHORT long
SHORT = 12
DUPLICATE_COVERAGE = 0.95  # an unread field whose text is (almost) all inside the record is a duplicate
DUPLICATE_MIN = 20  # chars: a shorter value found inside the record proves nothing ("en" is in every text)
MARK = "QQM{}Q{}QQ"  # ascii: survives strip(), JSON re-serialisation and joins untouched
UNREAD, DUPLICATE, STRUCTURE = "unread", "duplicate of carried text", "shapes the record"


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
    distinct: set[int] = field(default_factory=set)  # hashes of per-row values (capped): labels repeat, text does not
    words: list[int] = field(default_factory=list)


def _words(text: str) -> int:
    """Words, counting each CJK character as one (CJK prose has no spaces)."""
    return len(text.split()) + len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", text))


def _kind(value: Any) -> str:
    return "text" if isinstance(value, str) else "boolean" if isinstance(value, bool) else "number"


def leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of every non-empty string, number and boolean; lists are `[]` in the path."""
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from leaves(sub, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for sub in value:
            yield from leaves(sub, f"{prefix}[]")
    elif isinstance(value, str):
        if value.strip():
            yield prefix, value
    elif isinstance(value, (bool, int, float)):
        yield prefix, value


def _split(path: str) -> list[str]:
    return [p for p in re.split(r"\.|(\[\])", path) if p]


def _replace(value: Any, parts: list[str], i: int, fn: Any) -> Any:
    """A copy of `value` with every leaf at `parts` replaced by fn(leaf); untouched branches are shared."""
    if i == len(parts):
        return fn(value)
    step = parts[i]
    if step == "[]":
        return [_replace(v, parts, i + 1, fn) for v in value] if isinstance(value, list) else value
    if isinstance(value, dict) and step in value:
        return {**value, step: _replace(value[step], parts, i + 1, fn)}
    return value


def _locations(rec: Conversation) -> Iterator[tuple[str, int, str]]:
    """(destination, message index, text) of every string the record carries."""
    for i, m in enumerate(rec.messages):
        yield ("system prompt" if m.role == "system" else f"{m.role} text"), i, m.content
        if m.reasoning:
            yield "reasoning", i, m.reasoning
        for c in m.tool_calls or []:
            yield "tool call", i, c.function.name + " " + c.function.arguments
        for p in m.parts or []:
            yield "media part", i, p.ref
        for value in (m.name, m.tool_call_id):
            if value:
                yield "tool link", i, value
    for t in rec.tools or []:
        yield "tool declaration", -1, t.model_dump_json()
    if rec.preference:
        for m in rec.preference.rejected:
            yield "rejected answer", -1, m.content + " " + (m.reasoning or "")


def _fingerprint(recs: list[Conversation] | None) -> Any:
    return None if recs is None else [(r.content_hash(), r.label, r.preference) for r in recs]


class Tracer:
    """Applies probes to rows: the spec as it is, then (regenerate-mode specs) as native data."""

    def __init__(self, spec: AdapterSpec):
        self.spec = spec
        self.mappers = [RowMapper(spec)]
        if spec.mode == "regenerate":
            self.mappers.append(RowMapper(spec.model_copy(update={"mode": "native"})))
        self.key_names = _key_names(spec)

    def apply(self, index: int, row: dict[str, Any]) -> list[list[Conversation] | None]:
        out: list[list[Conversation] | None] = []
        for m in self.mappers:
            try:
                out.append(m.apply(index, row))
            except Exception:  # noqa: BLE001 - a probe that breaks the row is itself the answer ("shapes")
                out.append(None)
        return out

    def destinations(self, path: str, pid: int, base: list, probed: list) -> set[str]:
        """Where the markers of probe `pid` went; else whether the probe changed anything at all."""
        needle = MARK.format(pid, "")[:-2]
        found: set[str] = set()
        for k, recs in enumerate(probed):
            for rec in recs or []:
                for dest, _, text in _locations(rec):
                    if needle in text:
                        if k == 0:
                            found.add(dest)
                        elif not any(f.startswith(dest) for f in found):
                            found.add(dest + (" (regenerated)" if dest == "assistant text" else " (after the cut)"))
        if found:
            return found
        if any(_fingerprint(p) != _fingerprint(b) for p, b in zip(probed, base)):
            return {self.key_names.get(_split(path)[-1], STRUCTURE)}
        return {UNREAD}


def _parsed_into(text: str, base: list) -> set[str]:
    """For a text field that shapes the record (a transcript, a JSON string): which destinations carry
    its lines. Containment is the cross-check here, where a marker cannot survive the parse."""
    lines = fragments(text)
    if not lines:
        return set()
    found: set[str] = set()
    hit = 0
    for line in lines:
        dests = {d for recs in base for rec in recs or [] for d, _, t in _locations(rec) if line in t}
        if dests:
            hit += len(line)
            found |= dests
    return found if hit >= 0.5 * sum(len(ln) for ln in lines) else set()


def _key_names(spec: AdapterSpec) -> dict[str, str]:
    """The spec's own per-turn keys: what a probed key that changed the record (without a marker) is."""
    names = {
        spec.role_key: "role label",
        spec.train_flag_key: "training flag",
        spec.tool_call_id_key: "tool link",
        spec.tool_name_key: "tool link",
        spec.label_field: "label",
    }
    if spec.preference:
        names[spec.preference.chosen_score] = "preference score"
        names[spec.preference.rejected_score] = "preference score"
    return {k.split(".")[-1]: v for k, v in names.items() if k}


def _decoded(spec: AdapterSpec, row: dict[str, Any]) -> dict[str, Any] | None:
    if not spec.json_fields:
        return row
    row = dict(row)
    try:
        for name in spec.json_fields:
            row[name] = decode_json_field(row.get(name), name)
    except ValueError:
        return None
    return row


def _probe_value(value: Any, pid: int, counter: list[int]) -> Any:
    counter[0] += 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7919
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str) and value.strip():
        return MARK.format(pid, counter[0])
    return value


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


_DIFF = re.compile(r"^(?:diff --git |--- \S)", re.M)


def coverage(text: str, haystack: str) -> float:
    """Share of `text`'s characters found in `haystack`, line by line (a rendered copy still counts).

    A unified diff counts by its added lines: a trajectory's final patch repeats the edits its turns made."""
    lines = fragments(text, min_chars=1)  # markup and speaker headings are not text a copy must repeat
    if _DIFF.search(text):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        lines = [ln[1:].strip() for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
        lines = [ln for ln in lines if ln]
    total = sum(len(ln) for ln in lines)
    return sum(len(ln) for ln in lines if ln in haystack) / total if total else 1.0


def account(spec: AdapterSpec, rows: list[tuple[int, Any]]) -> list[FieldReport]:
    """The accounting table of `spec` over sampled (row_index, row) pairs, biggest text first."""
    tracer = Tracer(spec)
    stats: dict[str, _Stat] = {}
    total_chars = 0
    pid = 0
    for index, raw in rows:
        row = _decoded(spec, raw) if isinstance(raw, dict) else None
        if row is None:
            continue
        per_path: dict[str, int] = {}
        kinds: dict[str, str] = {}
        examples: dict[str, str] = {}
        values: dict[str, list[str]] = {}
        for path, value in leaves(row):
            if path not in stats and len(stats) >= MAX_PATHS:
                continue
            size = len(value) if isinstance(value, str) else 0
            per_path[path] = per_path.get(path, 0) + size
            kinds.setdefault(path, _kind(value))
            if isinstance(value, str):
                values.setdefault(path, []).append(value)
                if len(value) > len(examples.get(path, "")):
                    examples[path] = value
        for path, size in per_path.items():
            st = stats.setdefault(path, _Stat(kinds[path]))
            st.rows += 1
            st.lengths.append(size)
            total_chars += size
            if path in examples and len(st.samples) < 5:
                st.samples.append(examples[path])
            if path in values:
                joined = "\n".join(values[path])
                if len(st.distinct) < 1000:
                    st.distinct.add(hash(joined))
                st.words.append(_words(joined))
        todo = [p for p in per_path if stats[p].probes < PROBES_PER_PATH]
        if not todo:
            continue
        base = tracer.apply(index, row)
        if all(b is None for b in base):
            continue  # a row the adapter rejects: quarantined by the contract, nothing to trace here
        for path in todo:
            stats[path].probes += 1
        carried_text = "\n".join(t for recs in base for rec in recs or [] for _, _, t in _locations(rec))
        for path in todo:
            st = stats[path]
            pid += 1
            counter = [0]
            probed_row = _replace(row, _split(path), 0, lambda v, p=pid, c=counter: _probe_value(v, p, c))
            where = tracer.destinations(path, pid, base, tracer.apply(index, probed_row))
            st.traced += 1
            if where & {UNREAD, STRUCTURE} and st.kind == "text":
                text = "\n".join(v for p, v in leaves(row) if p == path and isinstance(v, str))
                if STRUCTURE in where:
                    where = {f"{d} (parsed)" for d in _parsed_into(text, base)} or where
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
            )
        )
    return sorted(out, key=lambda r: (-r.share, r.path))


def _distinct_prose(st: _Stat, median_chars: float) -> bool:
    """Short but real text: a few words, different on most rows (a moved half-sentence), not a label column."""
    many = len(st.distinct) >= 0.5 * st.rows if st.rows < 1000 else True
    return median_chars >= SHORT and bool(st.words) and median(st.words) >= 3 and many and st.rows >= 3


def prose(values: list[str]) -> bool:
    """Text a model could be trained on: has spaces, or letters outside ASCII (CJK prose has no spaces).
    A single ASCII token (a slug, a repo id, a hash) is an identifier whatever its length."""
    return any(re.search(r"\s", v.strip()) or re.search(r"[^\x00-\x7f]", v) for v in values)


def substantial(median_chars: float, share: float) -> bool:
    return median_chars >= SUBSTANTIAL_MEDIAN or (share >= SUBSTANTIAL_SHARE and median_chars >= SHORT)


# Values that are metadata whatever their length: not text a model should be trained on.
_META_VALUES = (
    ("urls", re.compile(r"^\s*(?:https?|s3|gs|hf|file)://\S+\s*$")),
    (
        "ids",
        re.compile(r"^\s*(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|\d+)\s*$", re.I),
    ),
    (
        "timestamps",
        re.compile(r"^\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\s*$"),
    ),
    ("file paths", re.compile(r"^\s*[\w.\-]*(?:/[\w.\-]+)+\.\w{1,6}\s*$")),
)
_META_KEYS = (
    ("ids", re.compile(r"(?:^|[_.\[\]])(?:id|uuid|guid|hash|sha|md5|idx|index|key)$|_id$|Id$", re.I)),
    ("urls", re.compile(r"(?:url|uri|link|href|source_file|path)$", re.I)),
    ("timestamps", re.compile(r"(?:time|date|timestamp|created|updated|_at)$", re.I)),
    (
        "scores",
        re.compile(
            r"(?:score|rating|reward|prob|probability|confidence|toxicity|quality|length|count|(?:^|_)n_\w+)s?$", re.I
        ),
    ),
    ("moderation", re.compile(r"(?:moderation|flagged|categories|category_scores|toxic|nsfw|harm\w*)", re.I)),
    ("language", re.compile(r"(?:^|[_.])(?:lang|language|locale)$", re.I)),
    ("license and provenance", re.compile(r"(?:license|source|origin|dataset|model|annotator|author|split)$", re.I)),
)


def value_reason(values: list[str]) -> str | None:
    """Metadata by its values alone (urls, ids, timestamps, file paths), whatever their length."""
    texts = [v for v in values if isinstance(v, str) and v.strip()]
    for why, rx in _META_VALUES:
        if texts and all(rx.match(v) for v in texts):
            return why
    return None


def metadata_reason(path: str, values: list[str]) -> str | None:
    """Why a short field is metadata: from its values, else from its name (only ever asked of short fields)."""
    by_value = value_reason(values)
    if by_value:
        return by_value
    last = _split(path)[-1]
    for why, rx in _META_KEYS:
        if rx.search(last) or rx.search(path):
            return why
    return None


def proposed_drops(spec: AdapterSpec, rows: list[tuple[int, Any]]) -> dict[str, str]:
    """`drop:` decisions a proposal makes: unread fields that are metadata or short values, with the reason.

    Substantial unread text is never dropped here: it fails the contract so a person decides."""
    drops = {}
    for r in account(spec, rows):
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
        f"field {r.path!r} ({r.rows} rows, median {r.median_chars:.0f} chars, {r.share:.0%} of the text) is neither "
        f"mapped nor dropped: e.g. {r.example[:60]!r}; map it, or name it under `drop:` with a reason"
        for r in reports
        if r.status == "unaccounted"
    ]
