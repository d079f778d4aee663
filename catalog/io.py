"""Atomic file writes and stable id buckets: the file-level primitives every layer shares.

A reader (or a resumed run) must only ever see whole files, so every write goes to a temp file in the
same folder and is renamed over the target (rename is atomic on one file system).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; rename it over `path` only if the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Temp file in the same folder, then rename: a crash never leaves half a file behind."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: Path, payload: Any) -> None:
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def stable_bucket(key: str, buckets: int) -> int:
    """Bucket of an id in [0, buckets), the same in every process and run.

    sha1, not hash(): Python salts str hashes per process, so two workers (or a resume) would disagree.
    Used for regeneration shards and the training held-out split."""
    return int.from_bytes(hashlib.sha1(key.encode("utf-8")).digest()[:8], "big") % buckets
