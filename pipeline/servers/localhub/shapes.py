"""JSON shapes the real `huggingface_hub` client parses (hf_api.py DatasetInfo, RepoSibling, RepoFile,
RepoFolder), and the list query (search, author, filter, gated, sort)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from pipeline.servers.localhub.repo import RepoFile, RepoScan

# `sort=` values the Hub accepts and what they order by (always descending, like the Hub). There is
# no traffic here, so the trending score is the (fake, card-given) like count.
SORT_KEYS: dict[str, Callable[[RepoScan], Any]] = {
    "downloads": lambda s: s.downloads,
    "likes": lambda s: s.likes,
    "trendingScore": lambda s: s.likes,
    "lastModified": lambda s: s.last_modified,
    "createdAt": lambda s: s.created_at,
    "id": lambda s: s.repo_id,
}


def repo_info(
    scan: RepoScan, *, full: bool = True, blobs: bool = False, expand: Iterable[str] | None = None
) -> dict[str, Any]:
    """Repo info as served by /api/datasets/{id}; `expand` selects properties like the Hub does."""
    info: dict[str, Any] = {
        "_id": scan.sha[:24],
        "id": scan.repo_id,
        "author": scan.author,
        "sha": scan.sha,
        "lastModified": scan.last_modified,
        "createdAt": scan.created_at,
        "private": False,
        "gated": scan.gated,
        "disabled": False,
        "downloads": scan.downloads,
        "downloadsAllTime": scan.downloads,
        "likes": scan.likes,
        "trendingScore": scan.likes,
        "tags": scan.tags,
        "description": scan.description,
        "usedStorage": sum(f.size for f in scan.files.values()),
    }
    if full or (expand and {"cardData", "siblings"} & set(expand)):
        info["cardData"] = scan.card_data
        info["siblings"] = [sibling(f, blobs) for f in scan.files.values()]
    if expand:
        wanted = set(expand) | {"_id", "id"}
        info = {k: v for k, v in info.items() if k in wanted}
    return info


def sibling(f: RepoFile, blobs: bool) -> dict[str, Any]:
    return {"rfilename": f.path, "size": f.size, "blobId": f.oid} if blobs else {"rfilename": f.path}


def tree_file(f: RepoFile) -> dict[str, Any]:
    return {"type": "file", "oid": f.oid, "size": f.size, "path": f.path}


def tree_folder(scan: RepoScan, path: str) -> dict[str, Any]:
    # A folder's oid must change when anything under it does (clients cache trees by it).
    digest = hashlib.sha1(
        "".join(f"{p}\0{f.oid}\n" for p, f in scan.files.items() if p.startswith(path + "/")).encode()
    ).hexdigest()
    return {"type": "directory", "oid": digest, "size": 0, "path": path}


def tree(scan: RepoScan, path: str, recursive: bool) -> list[dict[str, Any]] | None:
    """Entries under `path` ('' = root); None when `path` is neither a folder nor a file."""
    path = path.strip("/")
    if path in scan.files:
        return [tree_file(scan.files[path])]
    dirs = scan.directories()
    if path and path not in dirs:
        return None
    prefix = path + "/" if path else ""

    def wanted(p: str) -> bool:
        return p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])

    folders = [tree_folder(scan, d) for d in sorted(dirs) if wanted(d)]
    return folders + [tree_file(f) for p, f in scan.files.items() if wanted(p)]


def paths_info(scan: RepoScan, paths: Iterable[str]) -> list[dict[str, Any]]:
    dirs = scan.directories()
    out = []
    for p in paths:
        p = p.strip("/")
        if p in scan.files:
            out.append(tree_file(scan.files[p]))
        elif p in dirs:
            out.append(tree_folder(scan, p))
    return out


def matches(scan: RepoScan, *, search: list[str], author: str | None, filters: list[str], gated: str | None) -> bool:
    repo_id = scan.repo_id.lower()
    if any(term.lower() not in repo_id for term in search):
        return False
    if author and scan.author.lower() != author.lower():
        return False
    tags = {t.lower() for t in scan.tags}
    if any(f.lower() not in tags for f in filters):
        return False
    if gated is not None and (scan.gated is not False) != (gated.lower() == "true"):
        return False
    return True


def sort_scans(scans: list[RepoScan], sort: str | None, direction: str | None) -> list[RepoScan]:
    """Descending by default (the Hub's only order); `direction=1` is accepted for old clients."""
    if not sort:
        return scans
    key = SORT_KEYS.get(sort)
    if key is None:
        raise ValueError(f"unknown sort {sort!r}; use one of {', '.join(SORT_KEYS)}")
    ascending = direction in ("1", "asc")
    return sorted(scans, key=lambda s: (key(s), s.repo_id), reverse=not ascending)
