"""A person's decisions about an adapter: approve, reject, map a role label, accept an edited spec.

Approval needs a passing contract computed for the current spec, no open REVIEW item and no reviewer's flag
open on this spec (adapters.review.verdict, adapters.review.flags); `force` overrides that only with a note saying why,
which is stored with the approval.
"""

from __future__ import annotations

import typing

from adapters.prove.contract import ContractResult, run_contract
from adapters.read.source import iter_raw_rows
from adapters.review import store, verdict
from adapters.spec import AdapterSpec, RoleTarget
from catalog.db import Catalog
from catalog.errors import DraftsetError
from catalog.names import require_known
from catalog.untrusted import command, shell_word, split_assignment

ROLE_TARGETS = typing.get_args(RoleTarget)


def approve(
    catalog: Catalog, repo_id: str, by: str, note: str | None = None, force: bool = False
) -> store.AdapterRecord:
    record = store.require(catalog, repo_id)
    if force and not (note and note.strip()):
        raise DraftsetError(
            "--force needs --note saying why a failing contract is acceptable",
            hint=f'draftset adapters approve {shell_word(repo_id)} --force --note "why"',
        )
    if not force:
        if not record.contract_current:
            raise DraftsetError(
                f"no contract result for the current spec of {repo_id}",
                hint=f"run the contract first: draftset adapters test {shell_word(repo_id)}",
            )
        found = verdict.of_record(record)  # the one verdict the CLI, API and page show
        if not found.passed:
            raise DraftsetError(
                f"contract of {repo_id} fails: " + " | ".join(p.line() for p in found.errors),
                hint=f"fix the spec (draftset adapters map/edit {shell_word(repo_id)}) and re-test, or "
                f'approve anyway with --force --note "why"',
            )
        if found.flags_open:  # a reviewer said a record is wrong: approving skips their finding
            raise DraftsetError(
                f"{repo_id} has {len(found.flags_open)} open reviewer flag(s): "
                + " | ".join(f"{f['flag_id']} {f['brief']}" for f in found.flags_open),
                hint=f'{found.next_step(repo_id)}; or approve anyway with --force --note "why"',
            )
        if found.review_open:  # inference asked a person to check these fields: approving skips that check
            raise DraftsetError(
                f"{repo_id} has {len(found.review_open)} open REVIEW item(s): {', '.join(found.review_open)}",
                hint=found.next_step(repo_id),
            )
    return store.record_review(catalog, record, "approved", by, note)


def mark_checked(catalog: Catalog, repo_id: str, fields: list[str], by: str) -> store.AdapterRecord:
    """A person says they checked these open REVIEW items; each is closed and recorded in its reason."""
    record = store.require(catalog, repo_id)
    spec = record.spec.model_copy(deep=True)
    for name in fields:
        require_known(
            "open REVIEW item",
            name,
            spec.needs_review,
            where=repo_id,
            hint=command("draftset", "adapters", "show", repo_id),
        )
        spec.needs_review.remove(name)
        spec.reasons[name] = f"{spec.reasons.get(name, '')} (checked by {by})".strip()
    return store.save_spec(catalog, AdapterSpec.from_data(spec.model_dump(mode="json")))


def reject(catalog: Catalog, repo_id: str, by: str, note: str) -> store.AdapterRecord:
    if not note or not note.strip():
        raise DraftsetError(
            "reject needs --note saying why", hint=f'draftset adapters reject {shell_word(repo_id)} --note "why"'
        )
    return store.record_review(catalog, store.require(catalog, repo_id), "rejected", by, note)


def parse_assignment(text: str) -> tuple[str, RoleTarget]:
    label, role, sep = split_assignment(text)  # a JSON-string label names a label with control characters
    if not sep or not label or role not in ROLE_TARGETS:
        raise DraftsetError(
            f"cannot read role mapping {text!r}",
            hint=f"write LABEL=ROLE with ROLE one of {', '.join(ROLE_TARGETS)}, "
            "e.g. supervisor_note=system (drop leaves that label's turns out, explicitly)",
        )
    return label, typing.cast(RoleTarget, role)


def map_roles(catalog: Catalog, repo_id: str, assignments: list[str], by: str) -> store.AdapterRecord:
    """Set role-map entries by hand; each decision is recorded as the reason for that entry."""
    record = store.require(catalog, repo_id)
    spec = record.spec.model_copy(deep=True)
    if spec.layout == "columns":
        raise DraftsetError(f"{repo_id} has a column layout: it has no role labels to map")
    seen = _labels_seen(record)
    for text in assignments:
        label, role = parse_assignment(text)
        if seen is not None and label not in seen:  # a typo would stale the approval and change nothing
            require_known(
                "role label",
                label,
                seen,
                where=f"{repo_id}'s sampled rows",
                hint=f"map a label the rows have; `draftset adapters show {shell_word(repo_id)}` lists them",
            )
        spec.role_map[label] = role
        spec.reasons[f"role_map.{label}"] = f"set by {by}: {label!r} → {role}" + (
            " (its turns are left out on purpose)" if role == "drop" else ""
        )
        spec.needs_review = [f for f in spec.needs_review if f != f"role_map.{label}"]
    return store.save_spec(catalog, AdapterSpec.from_data(spec.model_dump(mode="json")))


def _labels_seen(record: store.AdapterRecord) -> set[str] | None:
    """The role labels a mapping can name: those the spec already maps and those the contract counted in the
    sampled rows. Only a contract of this very spec counts: one run on an older spec may have read labels
    under another role key or path, and a right label must never be refused for it. None: nothing to check
    a label against (no current contract), so the label is taken as given."""
    if not record.contract_current:
        return None
    counted = (record.contract or {}).get("role_counts") or {}
    if not counted and not (record.contract or {}).get("n_rows"):
        return None
    return set(record.spec.role_map) | set(counted)


def keep_decisions(old: AdapterSpec, new: AdapterSpec) -> AdapterSpec:
    """A re-proposed spec keeps the role mappings a person set (`map`), for labels still present, and the
    field decisions of the old spec: its `drop:` reasons (a person's reason wins over a proposed one) and its
    `max_bad_fraction`."""
    if old.drop:
        new.drop = {**(new.drop or {}), **old.drop}
    if old.max_bad_fraction is not None and new.max_bad_fraction is None:
        new.max_bad_fraction = old.max_bad_fraction
    for key, why in old.reasons.items():
        label = key.removeprefix("role_map.")
        if (
            key.startswith("role_map.")
            and why.startswith("set by ")
            and key in new.needs_review
            and label in old.role_map
        ):  # a hand edit may have removed the entry but kept its reason
            new.role_map[label] = old.role_map[label]
            new.reasons[key] = why
            new.needs_review.remove(key)
        elif "(checked by " in why and key in new.needs_review and _value(old, key) == _value(new, key):
            new.reasons[key] = why  # a person checked this very value (mark_checked): it stays checked
            new.needs_review.remove(key)
    return new


def _value(spec: AdapterSpec, dotted: str) -> object:
    value: object = spec.model_dump(mode="json")
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def accept_edit(catalog: Catalog, repo_id: str, text: str) -> store.AdapterRecord:
    """Validate an edited YAML spec and store it (a changed hash makes an approval stale)."""
    spec = AdapterSpec.from_yaml(text, where=f"for {repo_id}")
    if spec.source.repo_id != repo_id:
        raise DraftsetError(
            f"edited spec names {spec.source.repo_id}, not {repo_id}",
            hint="source.repo_id cannot change; propose the other dataset separately",
        )
    return store.save_spec(catalog, spec)


def check_adapter(
    catalog: Catalog, repo_id: str, *, endpoint: str, token: str | None = None, rows: int = 500
) -> tuple[store.AdapterRecord, ContractResult]:
    """Run the contract on `rows` rows sampled across all files and store the result with the spec."""
    record = store.require(catalog, repo_id)
    result = run_contract(record.spec, iter_raw_rows(record.spec, endpoint=endpoint, token=token, sample=rows))
    return store.save_spec(catalog, record.spec, contract=result.to_json()), result
