"""The ingestion gate: only an adapter approved for its current spec hash and revision may run.

Every ingestion entry point calls `require_approved` first. It re-hashes the stored spec rather than
trusting the stored hash, so a spec changed behind the catalog's back is refused as well.
"""

from __future__ import annotations

from adapters.review import store
from adapters.spec import AdapterSpec
from catalog.db import Catalog
from catalog.errors import DraftsetError
from catalog.untrusted import shell_word


def require_approved(catalog: Catalog, repo_id: str, revision: str | None = None) -> AdapterSpec:
    """The approved spec for `repo_id` at `revision` (default: the spec's own pinned revision)."""
    record = store.require(catalog, repo_id)
    q = shell_word(repo_id)  # a pasted hint runs draftset and nothing else
    review = f"draftset adapters show {q} && draftset adapters test {q} && draftset adapters approve {q} --by NAME"
    if record.status == "rejected":
        raise DraftsetError(
            f"adapter for {repo_id} was rejected by {record.reviewed_by}: {record.note or 'no note'}",
            hint=f"fix it (draftset adapters edit {q}), then {review}",
        )
    if record.approved_spec_hash is None:
        raise DraftsetError(
            f"adapter for {repo_id} is not approved (status {record.status})", hint=f"review and approve it: {review}"
        )
    spec = record.spec
    wanted_revision = revision or spec.source.revision
    if spec.spec_hash() != record.approved_spec_hash:
        raise DraftsetError(
            f"adapter for {repo_id} is stale: the spec changed after {record.reviewed_by} approved it",
            hint=f"re-test and re-approve it: {review}",
        )
    if wanted_revision != record.approved_revision or spec.source.revision != record.approved_revision:
        raise DraftsetError(
            f"adapter for {repo_id} is stale: approved for revision {str(record.approved_revision)[:12]}, "
            f"dataset is at {wanted_revision[:12]}",
            hint=f"re-propose for the new revision, then approve: draftset adapters propose {q} && {review}",
        )
    return spec
