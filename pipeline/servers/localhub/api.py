"""Hub API routes: listing, repo info, tree, paths-info and file resolve (HEAD/GET, Range).

Handlers are plain functions (starlette runs them in its thread pool) because they walk the filesystem;
only paths-info, which reads a request body, is async. Errors carry `X-Error-Code` (RepoNotFound /
RevisionNotFound / EntryNotFound / GatedRepo) because that header, not the status, is what
`huggingface_hub.utils.hf_raise_for_status` turns into typed exceptions.
"""

from __future__ import annotations

import json
import mimetypes
import os
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from pipeline.servers.localhub import shapes
from pipeline.servers.localhub.repo import RepoScan, servable
from pipeline.servers.localhub.store import HubStore

MAX_PAGE = 1000  # the Hub's largest page; `limit` smaller than this is the page size
MAX_BODY_BYTES = 1024 * 1024  # a paths-info body lists file names; nothing legitimate comes close


class HubJSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        # Card YAML may hold dates; str() them rather than fail the whole listing.
        # "replace": a lone surrogate in a served cell must not turn the whole answer into a 500.
        return json.dumps(content, ensure_ascii=False, default=str).encode("utf-8", "replace")


class HubError(Exception):
    """Raised inside a route; becomes the Hub's error response with X-Error-Code."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}

    def response(self) -> Response:
        # Header values must be printable latin-1; a requested path is user input (unicode, %0A, ...).
        safe = "".join(c if " " <= c <= "~" else "?" for c in self.message)
        headers = {"X-Error-Code": self.code, "X-Error-Message": safe, **self.headers}
        return HubJSON({"error": self.message}, status_code=self.status, headers=headers)


def _store(request: Request) -> HubStore:
    return request.app.state.store


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


def authorized(request: Request) -> bool:
    """Any non-empty bearer token opens gated repos (the local Hub has no users)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def get_scan(request: Request) -> RepoScan:
    repo_id = f"{request.path_params['owner']}/{request.path_params['name']}"
    scan = _store(request).get(repo_id)
    if scan is None:
        raise HubError(404, "RepoNotFound", f"Repository not found: dataset {repo_id} does not exist.")
    return scan


def check_revision(scan: RepoScan, revision: str) -> None:
    if revision not in ("main", scan.sha):
        raise HubError(
            404,
            "RevisionNotFound",
            f"Invalid rev id: {revision} (dataset {scan.repo_id} is at {scan.sha}, alias 'main').",
        )


def _expand(request: Request) -> list[str]:
    return request.query_params.getlist("expand") + request.query_params.getlist("expand[]")


def list_datasets(request: Request) -> Response:
    q = request.query_params
    try:
        limit = int(q["limit"]) if "limit" in q else None
        offset = int(q.get("cursor", "0"))
    except ValueError:
        limit = offset = -1
    if (limit is not None and limit < 1) or offset < 0:
        raise HubError(400, "BadRequest", "limit must be a positive integer and cursor a non-negative one")
    found = [
        s
        for s in _store(request).all()
        if shapes.matches(
            s, search=q.getlist("search"), author=q.get("author"), filters=q.getlist("filter"), gated=q.get("gated")
        )
    ]
    try:
        found = shapes.sort_scans(found, q.get("sort"), q.get("direction"))
    except ValueError as exc:
        raise HubError(400, "BadRequest", str(exc)) from exc
    size = min(limit or MAX_PAGE, request.app.state.page_size)
    page = found[offset : offset + size]
    full, expand = _truthy(q.get("full")), _expand(request)
    body = [shapes.repo_info(s, full=full, expand=expand or None) for s in page]
    headers = {}
    if offset + size < len(found):
        params = [(k, v) for k, v in q.multi_items() if k != "cursor"] + [("cursor", str(offset + size))]
        headers["Link"] = f'<{request.url.replace(query=urlencode(params))}>; rel="next"'
    return HubJSON(body, headers=headers)


def dataset_info(request: Request) -> Response:
    scan = get_scan(request)
    if "rev" in request.path_params:
        check_revision(scan, request.path_params["rev"])
    expand = _expand(request)
    return HubJSON(
        shapes.repo_info(scan, full=True, blobs=_truthy(request.query_params.get("blobs")), expand=expand or None)
    )


def list_tree(request: Request) -> Response:
    scan = get_scan(request)
    check_revision(scan, request.path_params["rev"])
    path = request.path_params.get("path", "")
    entries = shapes.tree(scan, path, recursive=_truthy(request.query_params.get("recursive")))
    if entries is None:
        raise HubError(
            404, "EntryNotFound", f"{path} does not exist in dataset {scan.repo_id}", {"X-Repo-Commit": scan.sha}
        )
    return HubJSON(entries)


async def paths_info(request: Request) -> Response:
    scan = get_scan(request)
    check_revision(scan, request.path_params["rev"])
    body = b""
    async for chunk in request.stream():  # bounded: the server never buffers an unbounded body
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise HubError(413, "BadRequest", f"request body over {MAX_BODY_BYTES:,} bytes")
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            paths = json.loads(body).get("paths", [])
        except (ValueError, AttributeError):
            raise HubError(400, "BadRequest", 'expected a JSON object {"paths": [...]}') from None
    else:
        # urlencoded by hand: starlette's form parser needs python-multipart for this one field
        paths = parse_qs(body.decode("utf-8", "replace")).get("paths", [])
    if not isinstance(paths, list):
        raise HubError(400, "BadRequest", "paths must be a list")
    return HubJSON(shapes.paths_info(scan, [str(p) for p in paths]))


def resolve(request: Request) -> Response:
    scan = get_scan(request)
    check_revision(scan, request.path_params["rev"])
    if scan.gated and not authorized(request):
        raise HubError(
            401,
            "GatedRepo",
            f"Access to dataset {scan.repo_id} is restricted. You must have access to it and be "
            "authenticated to access it. Please log in.",
            {"X-Repo-Commit": scan.sha},
        )
    path = request.path_params["path"]
    entry = scan.files.get(path)
    if entry is None:
        raise HubError(
            404, "EntryNotFound", f"{path} does not exist in dataset {scan.repo_id}", {"X-Repo-Commit": scan.sha}
        )
    # The file may have been swapped for a symlink, a hard link or a FIFO since the scan: serve only a
    # servable file (one name, regular) whose real path is still inside the repo folder.
    real = os.path.realpath(entry.abspath)
    try:
        st = os.lstat(real)
    except OSError:
        st = None
    if real != str(entry.abspath) or st is None or not servable(st):
        raise HubError(
            404, "EntryNotFound", f"{path} does not exist in dataset {scan.repo_id}", {"X-Repo-Commit": scan.sha}
        )
    # No X-Xet-* headers: the client then downloads over plain HTTP instead of the (unreachable) Xet CAS.
    headers = {"ETag": f'"{entry.oid}"', "X-Repo-Commit": scan.sha}
    media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return FileResponse(entry.abspath, headers=headers, media_type=media_type)


REPO = "/api/datasets/{owner}/{name}"
routes = [
    Route("/api/datasets", list_datasets),
    Route(REPO, dataset_info),
    Route(REPO + "/revision/{rev:path}", dataset_info),
    Route(REPO + "/tree/{rev}", list_tree),
    Route(REPO + "/tree/{rev}/{path:path}", list_tree),
    Route(REPO + "/paths-info/{rev}", paths_info, methods=["POST"]),
    Route("/datasets/{owner}/{name}/resolve/{rev}/{path:path}", resolve, methods=["GET", "HEAD"]),
]
