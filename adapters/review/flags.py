"""Reviewers' per-record flags: what a person saw wrong in one sampled record, kept in the catalog.

A flag binds to the spec hash it judged, as an approval does. Its state follows from that and from whether
someone resolved it:

- `open`: on the current spec, unresolved. The verdict counts it (at least `pass with warnings`, one grouped
  problem line) and approval is blocked until it is resolved with a note, or forced with a note;
- `stale`: unresolved, but on an older spec: shown, never blocking (the reading it judged is gone; re-flag
  the record if the new spec still gets it wrong);
- `resolved`: someone said, in a note, what was done about it.

Notes are the reviewer's words: untrusted text, stored as given (bounded), escaped wherever shown.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, ConfigDict

from catalog.db import Catalog
from catalog.errors import DraftsetError, NotFound
from catalog.names import require_known, unknown_name
from catalog.untrusted import Verbatim, clean_text, command

KINDS = ("wrong_role", "lost_text", "bad_tool_call", "markup", "other")
MAX_NOTE = 2000
State = Literal["open", "stale", "resolved"]


class Flag(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flag_id: str
    repo_id: str
    spec_hash: str
    revision: str
    row_index: int
    record_id: str | None = None
    kind: str
    note: str | None = None
    flagged_by: str
    flagged_at: datetime
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    resolution: str | None = None

    def state(self, spec_hash: str) -> State:
        if self.resolved_at is not None:
            return "resolved"
        return "open" if self.spec_hash == spec_hash else "stale"

    def brief(self, width: int = 60) -> str:
        """`row 14 lost_text: “the answer is cut”` (the note cleaned and cut: it is shown in one line)."""
        note = clean_text(self.note or "", keep_newlines=False)
        note = note if len(note) <= width else note[: width - 1] + "…"
        return f"row {self.row_index} {self.kind}" + (f": “{note}”" if note else "")


def _table_missing(exc: duckdb.Error) -> bool:
    return isinstance(exc, duckdb.CatalogException) and "review_flags" in str(exc)


def query(repo_id: str | None = None) -> tuple[str, list[str]]:
    """The statement that reads the flags (of one adapter, or of all), oldest first: for Catalog.query_all."""
    where, params = ("WHERE repo_id = ?", [repo_id]) if repo_id is not None else ("", [])
    return f"SELECT * FROM review_flags {where} ORDER BY flagged_at, flag_id", params


def with_flags(
    catalog: Catalog, sql: str, params: list[Any], repo_id: str | None = None
) -> tuple[list[dict[str, Any]], list[Flag]]:
    """Rows of `sql` and the flags, read on one connection. A catalog from before migration 0036 holds no
    flags: flagging needs a writer, and every writer migrates first."""
    if not catalog.path.exists():
        return [], []
    try:
        rows, flag_rows = catalog.query_all([(sql, params), query(repo_id)])
    except duckdb.Error as exc:
        if not _table_missing(exc):
            raise
        rows, flag_rows = catalog.query(sql, params), []
    return rows, [Flag.model_validate(r) for r in flag_rows]


def load(catalog: Catalog, repo_id: str | None = None) -> list[Flag]:
    """Every flag (of one adapter, or of all), oldest first (none in a catalog from before migration 0036)."""
    if not catalog.path.exists():
        return []
    try:
        return [Flag.model_validate(r) for r in catalog.query(*query(repo_id))]
    except duckdb.Error as exc:
        if _table_missing(exc):
            return []
        raise


def by_repo(flags: Iterable[Flag]) -> dict[str, list[Flag]]:
    out: dict[str, list[Flag]] = {}
    for f in flags:
        out.setdefault(f.repo_id, []).append(f)
    return out


def open_on(flags: Iterable[Flag], spec_hash: str) -> list[Flag]:
    return [f for f in flags if f.state(spec_hash) == "open"]


def listed(flags: Iterable[Flag], spec_hash: str) -> list[dict[str, object]]:
    """Flags as the API, the page and `adapters flags --json` give them: each with its state on `spec_hash`."""
    return [{**f.model_dump(mode="json"), "state": f.state(spec_hash)} for f in flags]


def known_row_count(catalog: Catalog, repo_id: str) -> int | None:
    """The dataset's row count as find recorded it from the Hub (`candidates.n_rows`), or None when unknown:
    a flag on a row past it names a row nobody could have looked at."""
    rows = catalog.query("SELECT n_rows FROM candidates WHERE repo_id = ?", [repo_id]) if catalog.path.exists() else []
    return int(rows[0]["n_rows"]) if rows and rows[0]["n_rows"] is not None else None


def add(
    catalog: Catalog,
    repo_id: str,
    spec_hash: str,
    revision: str,
    row_index: int,
    kind: str,
    note: str | None,
    by: str,
    record_id: str | None = None,
    *,
    current: str,
) -> Flag:
    """Store one flag on (repo, spec hash). The caller says which spec the reviewer saw (`spec_hash`) and
    which is the adapter's now (`current`, from store, which reads flags with each adapter and so is not
    imported here); they must be the same, or the flag would judge a reading nobody looked at."""
    require_known("flag kind", kind, KINDS, where=f"flag on {repo_id}", hint=f"one of {', '.join(KINDS)}")
    if spec_hash != current:
        raise DraftsetError(
            f"{repo_id}'s spec changed since the page was loaded ({spec_hash[:12]} → {current[:12]})",
            hint="reload the page and look at the record again under the current spec",
        )
    if row_index < 0:
        raise DraftsetError(f"row must be ≥ 0, got {row_index}", hint="rows are numbered from 0 in file order")
    if (size := known_row_count(catalog, repo_id)) is not None and row_index >= size:
        raise NotFound(
            f"{repo_id} has no row {row_index} (the Hub counts {size:,} rows)",
            hint=f"rows are numbered from 0 in file order: pick a row below {size:,}",
        )
    text = _bounded(note)
    if kind == "other" and not text:
        raise DraftsetError("a flag of kind other needs a note saying what is wrong", hint="add a note")
    flag = Flag(
        flag_id=secrets.token_hex(4),
        repo_id=repo_id,
        spec_hash=spec_hash,
        revision=revision,
        row_index=row_index,
        record_id=record_id,
        kind=kind,
        note=text or None,
        flagged_by=by,
        flagged_at=datetime.now(),
    )
    catalog.upsert("review_flags", [flag.model_dump()])
    return flag


def resolve(catalog: Catalog, repo_id: str, flag_id: str, by: str, note: str) -> Flag:
    """Close one flag with a note saying what was done (the spec fixed, or why the record is fine)."""
    flags = load(catalog, repo_id)
    found = next((f for f in flags if f.flag_id == flag_id), None)
    if found is None:
        raise unknown_name(
            "flag",
            flag_id,
            [f.flag_id for f in flags],
            where=repo_id,
            hint=command("draftset", "adapters", "flags", repo_id) + " lists them",
        )
    text = _bounded(note)
    if not text:
        raise DraftsetError("resolving a flag needs --note saying what was done", hint=resolve_hint(repo_id, flag_id))
    if found.resolved_at is not None:
        raise DraftsetError(
            f"flag {flag_id} of {repo_id} was already resolved by {found.resolved_by}: {found.resolution!r}",
            hint=command("draftset", "adapters", "flags", repo_id) + " lists the open ones",
        )
    done = found.model_copy(update={"resolved_by": by, "resolved_at": datetime.now(), "resolution": text})
    catalog.upsert("review_flags", [done.model_dump()])
    return done


def _bounded(note: str | None) -> str:
    """A reviewer's note, stripped; refused past MAX_NOTE characters (a flag's note and a resolution alike)."""
    text = (note or "").strip()
    if len(text) > MAX_NOTE:
        raise DraftsetError(f"flag note is {len(text):,} characters; at most {MAX_NOTE:,}", hint="shorten it")
    return text


def resolve_hint(repo_id: str, flag_id: str) -> str:
    """The suggested command that resolves one flag (the repo id quoted: it comes from data)."""
    return command("draftset", "adapters", "flags", repo_id, "--resolve", flag_id, Verbatim('--note "what was done"'))


def group_line(open_flags: Sequence[Flag]) -> str:
    """`2 records flagged by reviewers: lost_text ×2, e.g. row 14: “cut”`: one line for every open flag."""
    records = len({f.row_index for f in open_flags})
    kinds = Counter(f.kind for f in open_flags)
    first = min(open_flags, key=lambda f: f.row_index)
    listed = ", ".join(f"{k} ×{n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{records:,} record{'s' if records != 1 else ''} flagged by reviewers: {listed}, e.g. {first.brief()}"
