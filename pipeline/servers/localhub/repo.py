"""One dataset repo folder (`ROOT/<owner>/<name>/`) seen the way the Hub describes it.

A scan reads the card's YAML front matter (tags, gating, fake popularity) and every file's bytes
(git blob ids and the content-hash revision). Scans are pure functions of the folder contents; the
store caches them keyed on a cheap stat signature.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from catalog.limits import MAX_CARD_BYTES, LimitExceeded
from catalog.untrusted import load_card_yaml, split_card

# Card keys whose values become `key:value` tags, as on the real Hub (search filters match tags).
TAG_KEYS = (
    "task_categories",
    "task_ids",
    "language",
    "license",
    "size_categories",
    "multilinguality",
    "language_creators",
    "annotations_creators",
    "source_datasets",
    "modality",
)
# Extensions the Hub/`datasets` treat as data files; they also give `format:` tags.
DATA_FORMATS = {
    ".parquet": "parquet",
    ".jsonl": "json",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "csv",
    ".arrow": "arrow",
    ".txt": "text",
}

Signature = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class RepoFile:
    path: str  # relative, forward slashes
    size: int
    oid: str  # git blob sha1: also the ETag, so the client's cache is content-addressed
    abspath: Path


@dataclass(frozen=True)
class RepoScan:
    repo_id: str
    root: Path
    sha: str  # 40-hex content hash of the folder: the only revision served
    files: dict[str, RepoFile]
    card_data: dict[str, Any]
    card_text: str
    card_error: str | None
    last_modified: str
    created_at: str
    tags: list[str] = field(default_factory=list)

    @property
    def author(self) -> str:
        return self.repo_id.split("/", 1)[0]

    @property
    def gated(self) -> str | bool:
        value = self.card_data.get("gated")
        if value in (None, False, "false", "False"):
            return False
        return "manual" if value == "manual" else "auto"

    @property
    def downloads(self) -> int:
        return _as_int(self.card_data.get("x_downloads"))

    @property
    def likes(self) -> int:
        return _as_int(self.card_data.get("x_likes"))

    @property
    def description(self) -> str:
        return " ".join(self.card_text.split())[:300]

    def directories(self) -> set[str]:
        dirs: set[str] = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return dirs


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def servable(st: os.stat_result) -> bool:
    """A file the Hub may serve: a regular file with one name. A hard link is a second name for a file
    that may live outside the served folder (the symlink checks cannot see it); FIFOs, sockets and
    devices are not files (a FIFO blocks the reader forever)."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def iter_files(repo_dir: Path) -> list[tuple[str, os.stat_result]]:
    """Servable files under a repo, sorted; dot-entries (.git, .cache), symlinks, hard links and special
    files are never served."""
    found: list[tuple[str, os.stat_result]] = []
    stack = [(str(repo_dir), "")]
    while stack:  # os.scandir by hand (plain strings): the hot path of every listing
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, f"{prefix}{entry.name}/"))
                elif servable(st := entry.stat(follow_symlinks=False)):
                    found.append((prefix + entry.name, st))
    found.sort(key=lambda item: item[0])
    return found


def signature(files: list[tuple[str, os.stat_result]]) -> Signature:
    return tuple((rel, st.st_size, st.st_mtime_ns) for rel, st in files)


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_oid(path: Path) -> tuple[str, int]:
    """(git blob sha1, size) of a file, hashed in 1 MiB chunks: the server never holds a whole file.
    The blob header needs the size first; a file that changes while hashed is hashed again."""
    for _ in range(3):
        size = path.stat().st_size
        digest, read = hashlib.sha1(b"blob %d\0" % size), 0
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
                read += len(chunk)
        if read == size:
            break
    return digest.hexdigest(), read


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def parse_card(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(YAML front matter, markdown body, error). A broken card never breaks the listing.

    The YAML goes through catalog.untrusted.load_card_yaml (size, depth and alias-expansion limits), not
    RepoCard's plain yaml.safe_load: a 414-byte alias bomb expanded to 3 GB there."""
    front, body = split_card(text)
    if front is None:
        return {}, text, None
    try:
        data = load_card_yaml(front, "card YAML")
    except LimitExceeded as exc:
        return {}, body, f"{exc.reason}: {exc}"
    except Exception as exc:  # yaml errors come in many types; the card is untrusted input
        return {}, body, f"{type(exc).__name__}: {str(exc)[:300]}"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return {}, body, f"card metadata is a {type(data).__name__}, not a mapping"
    return data, body, None


def card_tags(card: dict[str, Any], files: dict[str, RepoFile]) -> list[str]:
    tags: list[str] = []
    for key in TAG_KEYS:
        values = card.get(key)
        for value in values if isinstance(values, list) else [values] if values else []:
            tags.append(f"{key}:{value}")
    extra = card.get("tags")
    tags.extend(str(t) for t in (extra if isinstance(extra, list) else [extra] if extra else []))
    formats = {DATA_FORMATS[Path(p).suffix] for p in files if Path(p).suffix in DATA_FORMATS}
    tags.extend(f"format:{f}" for f in sorted(formats))
    tags.append("region:us")
    return list(dict.fromkeys(tags))


def scan_repo(repo_dir: Path, repo_id: str, listing: list[tuple[str, os.stat_result]]) -> RepoScan:
    files: dict[str, RepoFile] = {}
    revision = hashlib.sha1()
    for rel, _st in listing:
        oid, size = file_oid(repo_dir / rel)
        files[rel] = RepoFile(rel, size, oid, repo_dir / rel)
        revision.update(f"{rel}\0{oid}\n".encode())
    card_data: dict[str, Any] = {}
    card_text = ""
    card_error: str | None = None
    if "README.md" in files:
        with files["README.md"].abspath.open("rb") as fh:  # bounded: a card is metadata, not data
            raw = fh.read(MAX_CARD_BYTES + 1)
        card_data, card_text, card_error = parse_card(raw.decode("utf-8-sig", errors="replace"))
        if len(raw) > MAX_CARD_BYTES:
            card_data, card_error = {}, f"card_too_large: README.md is over the {MAX_CARD_BYTES:,}-byte limit"
    mtimes = [st.st_mtime for _, st in listing] or [repo_dir.stat().st_mtime]
    return RepoScan(
        repo_id=repo_id,
        root=repo_dir,
        sha=revision.hexdigest(),
        files=files,
        card_data=card_data,
        card_text=card_text,
        card_error=card_error,
        last_modified=_iso(max(mtimes)),
        created_at=_iso(min(mtimes)),
        tags=card_tags(card_data, files),
    )
