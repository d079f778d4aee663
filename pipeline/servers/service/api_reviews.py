"""The JSON API of per-record review state (record_reviews.py): the sample's state, the queue, search, marks.

Viewers read it; reviewers mark. Errors are {error, next}.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import Field

from pipeline.servers.service import review_data
from pipeline.servers.service.api import Reviewer, Strict, Viewer, fast_json, service

router = APIRouter()


class ReviewMarkBody(Strict):
    spec_hash: str = Field(min_length=8, max_length=64, description="the spec the reviewer looked at")
    row_index: int = Field(ge=0)
    reviewed: bool = Field(True, description="false takes the mark back")
    record_id: str | None = Field(None, max_length=300)
    rows: int = Field(20, ge=0, le=review_data.MAX_PREVIEW_ROWS, description="the page's sample, for the answer")


def _review_state(request: Request, repo_id: str, rows: int, after: int | None, q: str | None) -> dict[str, Any]:
    from pipeline.servers.service import record_reviews

    s = service(request)
    sample = review_data.detail(
        s.catalog, repo_id, rows, endpoint=s.settings.hf_endpoint, token=s.hf_token, cache=s.cache
    )["previews"]
    found = [p["row_index"] for p in sample if record_reviews.matches(p, q or "")]
    state = record_reviews.state(s.catalog, repo_id, [p["row_index"] for p in sample], after)
    if q:  # the queue within the search's matches; the count stays the sample's
        state["matches"] = found
        state["next_unreviewed"] = record_reviews.state(s.catalog, repo_id, found, after)["next_unreviewed"]
    return state


@router.get("/api/adapters/{owner}/{name}/reviews")
def review_state(
    owner: str,
    name: str,
    request: Request,
    user: Viewer,
    rows: int = Query(20, ge=0, le=review_data.MAX_PREVIEW_ROWS),
    after: int | None = Query(None, ge=0, description="the queue's next row after this one"),
    q: str | None = Query(None, max_length=200, description="text search over the sampled records"),
) -> Response:
    """Which of the page's sampled records are reviewed or flagged, "reviewed N of M", the next unreviewed."""
    return fast_json(_review_state(request, f"{owner}/{name}", rows, after, q))


@router.post("/api/adapters/{owner}/{name}/reviews")
def mark_reviewed(owner: str, name: str, body: ReviewMarkBody, request: Request, user: Reviewer) -> Response:
    """Mark one record reviewed (or take it back) under the spec looked at (400 when it changed since)."""
    from pipeline.servers.service import record_reviews

    repo_id = f"{owner}/{name}"
    record_reviews.mark(
        service(request).catalog,
        repo_id,
        body.spec_hash,
        body.row_index,
        user.name,
        reviewed=body.reviewed,
        record_id=body.record_id,
    )
    return fast_json(_review_state(request, repo_id, body.rows, body.row_index, None))
