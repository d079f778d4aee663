"""One dataset repo folder (`ROOT/<owner>/<name>/`) seen the way the Hub describes it.

A scan reads the card's YAML front matter (tags, gating, fake popularity) and every file's bytes
(git blob ids and the content-hash revision). Scans are pure functions of the folder contents; the
store caches them keyed on a cheap stat signature.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Card keys whose values become `key:value` tags, as on the real Hub (search filters match tags).
TAG_KEYS = ("task_categories", "task_ids", "language", "license", "size_categories", "multilinguality",
            "language_creators", "annotations_creators", "source_datasets", "modality")
# Extensions the Hub/`datasets` treat as data files; they also give `format:` tags.
DATA_FORMATS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv",
                ".arrow": "arrow", ".txt": "text"}

Signature = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class RepoFile:
    path: str          # relative, forward slashes
    size: int
    oid: str           # git blob sha1: also the ETag, so the client's cache is content-addressed
    abspath: Path


@dataclass(frozen=True)
class RepoScan:
    repo_id: str
    root: Path
    sha: str                           # 40-hex content hash of the folder: the only revision served
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


def iter_files(repo_dir: Path) -> list[tuple[str, os.stat_result]]:
    """Regular files under a repo, sorted; dot-entries (.git, .cache) and symlinks are never served."""
    found: list[tuple[str, os.stat_result]] = []
    stack = [(str(repo_dir), "")]
    while stack:  # os.scandir by hand (plain strings): the hot path of every listing
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir():
                    stack.append((entry.path, f"{prefix}{entry.name}/"))
                elif entry.is_file():
                    found.append((prefix + entry.name, entry.stat()))
    found.sort(key=lambda item: item[0])
    return found


def signature(files: list[tuple[str, os.stat_result]]) -> Signature:
    return tuple((rel, st.st_size, st.st_mtime_ns) for rel, st in files)


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def parse_card(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(YAML front matter, markdown body, error). A broken card never breaks the listing."""
    from huggingface_hub.repocard import RepoCard

    try:
        card = RepoCard(text, ignore_metadata_errors=True)
        return card.data.to_dict(), card.text, None
    except Exception as exc:  # yaml errors come in many types; the card is untrusted input
        return {}, text, f"{type(exc).__name__}: {exc}"


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
        data = (repo_dir / rel).read_bytes()
        oid = git_blob_oid(data)
        files[rel] = RepoFile(rel, len(data), oid, repo_dir / rel)
        revision.update(f"{rel}\0{oid}\n".encode())
    card_data, card_text, card_error = {}, "", None
    if "README.md" in files:
        raw = files["README.md"].abspath.read_text(encoding="utf-8-sig", errors="replace")
        card_data, card_text, card_error = parse_card(raw)
    mtimes = [st.st_mtime for _, st in listing] or [repo_dir.stat().st_mtime]
    return RepoScan(repo_id=repo_id, root=repo_dir, sha=revision.hexdigest(), files=files,
                    card_data=card_data, card_text=card_text, card_error=card_error,
                    last_modified=_iso(max(mtimes)), created_at=_iso(min(mtimes)),
                    tags=card_tags(card_data, files))
