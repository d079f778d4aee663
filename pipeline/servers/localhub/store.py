"""The folder of repos behind the local Hub, with scans cached per repo.

A repo is rescanned (bytes hashed, card parsed) only when its stat signature (relative paths, sizes,
mtimes) changes, so listing 1,000 repos costs directory walks, not reads. The listing itself is reused
for `listing_ttl` seconds (walking 1,000 repos costs tens of ms); single-repo calls (info, tree,
resolve, viewer) always check the current signature. `cache=False` is the benchmark's naive baseline.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

from pipeline.servers.localhub.repo import RepoScan, Signature, iter_files, scan_repo, signature

# Hub repo-id rules (owner and name): letters, digits, '-', '_', '.'; no leading dot.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def valid_repo_id(repo_id: str) -> bool:
    parts = repo_id.split("/")
    return len(parts) == 2 and all(_NAME.match(p) and ".." not in p for p in parts)


class HubStore:
    def __init__(self, root: str | Path, *, cache: bool = True, listing_ttl: float = 1.0):
        self.root = Path(root).resolve()
        self.cache = cache
        self.listing_ttl = listing_ttl if cache else 0.0
        self._scans: dict[str, tuple[Signature, RepoScan]] = {}
        self._listing: tuple[float, list[RepoScan]] = (float("-inf"), [])
        self._lock = threading.Lock()

    def repo_ids(self) -> list[str]:
        ids: list[str] = []
        if not self.root.is_dir():
            return ids
        with os.scandir(self.root) as owners:
            for owner in owners:
                if not owner.is_dir() or owner.is_symlink() or not _NAME.match(owner.name):
                    continue
                with os.scandir(owner.path) as names:
                    ids.extend(
                        f"{owner.name}/{n.name}"
                        for n in names
                        if n.is_dir() and not n.is_symlink() and _NAME.match(n.name)
                    )
        return sorted(ids)

    def get(self, repo_id: str) -> RepoScan | None:
        """The current scan of one repo, or None when there is no such folder."""
        if not valid_repo_id(repo_id):
            return None
        repo_dir = self.root / repo_id
        # realpath, not is_symlink: a symlink at ANY level (the owner folder too) must not lead outside
        # the served root, or /datasets/evil/x/resolve/main/passwd serves /etc/passwd.
        if os.path.realpath(repo_dir) != str(repo_dir) or not repo_dir.is_dir():
            return None
        try:
            listing = iter_files(repo_dir)
        except FileNotFoundError:  # deleted while we walked it
            return None
        sig = signature(listing)
        with self._lock:
            cached = self._scans.get(repo_id)
        if self.cache and cached and cached[0] == sig:
            return cached[1]
        scan = scan_repo(repo_dir, repo_id, listing)
        if self.cache:
            with self._lock:
                self._scans[repo_id] = (sig, scan)
        return scan

    def all(self) -> list[RepoScan]:
        """Every repo, sorted by id; at most `listing_ttl` seconds old."""
        taken_at, scans = self._listing
        if time.monotonic() - taken_at < self.listing_ttl:
            return scans
        scans = [s for s in map(self.get, self.repo_ids()) if s is not None]
        self._listing = (time.monotonic(), scans)
        return scans
