"""Adapter persistence: the `adapters` catalog table plus an editable YAML copy per dataset.

The catalog row is the truth; `$DRAFTSET_HOME/adapters/<owner>__<name>.yaml` is the copy a person
edits (`draftset adapters edit`). An approval binds to (spec_hash, revision): saving a spec whose
hash or revision differs from the approved pair turns the status to `stale`.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.review import flags as review_flags
from adapters.spec import AdapterSpec
from catalog.db import Catalog
from catalog.errors import NotFound
from catalog.home import Home
from catalog.io import write_text_atomic
from catalog.names import closest
from catalog.untrusted import shell_word

Status = Literal["proposed", "approved", "rejected", "stale"]


class AdapterRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo_id: str
    revision: str
    spec: AdapterSpec
    spec_hash: str
    status: Status
    contract: dict[str, Any] | None = None
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    note: str | None = None
    approved_spec_hash: str | None = None
    approved_revision: str | None = None
    updated_at: datetime | None = None
    # Reviewers' flags on this adapter (adapters.review.flags), read with it so that every verdict counts them;
    # kept in their own table, never written back with the adapter row.
    flags: list[review_flags.Flag] = Field(default_factory=list)

    @property
    def open_flags(self) -> list[review_flags.Flag]:
        """Unresolved flags on the current spec: the ones the verdict counts and approval waits for."""
        return review_flags.open_on(self.flags, self.spec_hash)

    @property
    def contract_current(self) -> bool:
        """The stored contract result was computed for exactly this spec."""
        return bool(self.contract and self.contract.get("spec_hash") == self.spec_hash)

    @property
    def contract_passed(self) -> bool | None:
        return self.contract.get("passed") if self.contract is not None and self.contract_current else None

    def row(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"spec", "flags"})
        data["spec"] = self.spec.model_dump(mode="json")
        data["reviewed_at"], data["updated_at"] = self.reviewed_at, self.updated_at
        return data


def yaml_path(home: Path, repo_id: str) -> Path:
    return Home(home).adapter_yaml(repo_id)


def load(catalog: Catalog, repo_id: str) -> AdapterRecord | None:
    if not catalog.path.exists():
        return None
    rows, flags = review_flags.with_flags(catalog, "SELECT * FROM adapters WHERE repo_id = ?", [repo_id], repo_id)
    return _record(rows[0], flags) if rows else None


def require(catalog: Catalog, repo_id: str) -> AdapterRecord:
    record = load(catalog, repo_id)
    if record is None:
        known = [r["repo_id"] for r in catalog.query("SELECT repo_id FROM adapters")] if catalog.path.exists() else []
        near = closest(repo_id, known)
        if near:  # a typo of a known id: point at it, never at proposing the typo
            raise NotFound(
                f"no adapter for {repo_id}; did you mean {' or '.join(near)}?",
                hint=f"draftset adapters show {shell_word(near[0])}  (every adapter: draftset adapters list)",
            )
        raise NotFound(
            f"no adapter for {repo_id}", hint=f"propose one: draftset adapters propose {shell_word(repo_id)}"
        )
    return record


def list_all(catalog: Catalog) -> list[AdapterRecord]:
    if not catalog.path.exists():
        return []
    rows, flags = review_flags.with_flags(catalog, "SELECT * FROM adapters ORDER BY repo_id", [])
    grouped = review_flags.by_repo(flags)
    return [_record(r, grouped.get(r["repo_id"], [])) for r in rows]


def _record(row: dict[str, Any], flags: list[review_flags.Flag]) -> AdapterRecord:
    row = dict(row, flags=flags)
    row["spec"] = AdapterSpec.from_json(row["spec"])
    row["contract"] = json.loads(row["contract"]) if row.get("contract") else None
    return AdapterRecord.model_validate(row)


def _status_for(record: AdapterRecord | None, spec: AdapterSpec) -> Status:
    if record is None or record.status == "proposed":
        return "proposed"
    if record.approved_spec_hash is None:
        return record.status  # rejected stays rejected until a person approves
    same = record.approved_spec_hash == spec.spec_hash() and record.approved_revision == spec.source.revision
    return "approved" if same else "stale"


def save_spec(catalog: Catalog, spec: AdapterSpec, contract: dict[str, Any] | None = None) -> AdapterRecord:
    """Store a (new or edited) spec; keeps review fields, derives approved/stale, refreshes the YAML copy."""
    old = load(catalog, spec.source.repo_id)
    base = old.model_dump(exclude={"spec"}) if old else {}
    keep_contract = old is not None and old.contract_current and old.spec_hash == spec.spec_hash()
    record = AdapterRecord(
        **{
            **base,
            "repo_id": spec.source.repo_id,
            "revision": spec.source.revision,
            "spec": spec,
            "spec_hash": spec.spec_hash(),
            "status": _status_for(old, spec),
            "contract": contract
            if contract is not None
            else (old.contract if old is not None and keep_contract else None),
            "updated_at": datetime.now(),
        }
    )
    catalog.upsert("adapters", [record.row()])
    write_text_atomic(yaml_path(catalog.home, spec.source.repo_id), spec.to_yaml())
    return record


def record_review(catalog: Catalog, record: AdapterRecord, status: Status, by: str, note: str | None) -> AdapterRecord:
    """Record a person's approve/reject decision, bound to the current spec hash and revision."""
    approved = status == "approved"
    updated = record.model_copy(
        update={
            "status": status,
            "reviewed_by": by,
            "reviewed_at": datetime.now(),
            "note": note,
            "approved_spec_hash": record.spec_hash if approved else None,
            "approved_revision": record.revision if approved else None,
            "updated_at": datetime.now(),
        }
    )
    catalog.upsert("adapters", [updated.row()])
    return updated
