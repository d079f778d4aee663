"""Where each stage's data lives under $DRAFTSET_HOME (the common brief fixes the layout)."""

from __future__ import annotations

import re
from pathlib import Path

from catalog.errors import DraftsetError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def dataset_dirname(repo_id: str) -> str:
    """`owner/name` → `owner__name` (one folder level, reversible)."""
    owner, sep, name = repo_id.partition("/")
    if not sep or not _NAME.match(owner) or not _NAME.match(name):
        raise DraftsetError(f"not a dataset repo id: {repo_id!r}", hint="use the form owner/name")
    return f"{owner}__{name}"


def repo_from_dirname(dirname: str) -> str:
    owner, _, name = dirname.partition("__")
    return f"{owner}/{name}"


def normalized_dir(home: Path, repo_id: str) -> Path:
    return Path(home) / "data" / "normalized" / dataset_dirname(repo_id)


def normalized_repos(home: Path) -> list[str]:
    """Repos that have at least one finished normalized shard."""
    root = Path(home) / "data" / "normalized"
    if not root.is_dir():
        return []
    return sorted(repo_from_dirname(d.name) for d in root.iterdir()
                  if d.is_dir() and any(d.glob("part-*.parquet")))


def checked_name(name: str, what: str) -> str:
    """A mix/report name becomes a folder: refuse anything that could escape it."""
    if not _NAME.match(name):
        raise DraftsetError(f"invalid {what} name {name!r}",
                            hint="use letters, digits, '.', '_' or '-' (at most 100 characters)")
    return name


def mix_dir(home: Path, name: str) -> Path:
    return Path(home) / "data" / "mix" / checked_name(name, "mix")


def report_dir(home: Path, name: str) -> Path:
    return Path(home) / "reports" / checked_name(name, "report")


def toy_target_dir(home: Path) -> Path:
    return Path(home) / "models" / "toy-target"
