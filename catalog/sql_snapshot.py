"""Copies of an owned catalog for readers in other processes (the SQL console's capped children).

Why copies: DuckDB lets one process open the file read-write and then no other process may open it at
all, and a statement the service runs in its own process cannot be bounded (one function call ignores
interrupt() and memory_limit: catalog/limits.py). A copy taken under the owner's write lock is a
consistent state (every write of the home commits under that lock, and DuckDB checkpoints at commit),
and a child opens it read-only like any other catalog file.

One copy per write generation: statements between two writes share one copy, the first statement after
a write takes a new one (a metadata catalog copies in milliseconds). A copy is deleted when it is no
longer the newest and no statement reads it. Not owned (no service), a child reads the file itself.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from catalog import owner as _owner
from catalog.db import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home


@dataclass
class _Copy:
    home: Path  # a home folder holding only catalog.duckdb (and its WAL)
    generation: int
    readers: int = 0


class Snapshots:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.root = Home(catalog.home).sql_snapshots
        self._newest: _Copy | None = None
        self._lock = threading.Lock()
        shutil.rmtree(self.root, ignore_errors=True)  # a killed service's copies: no reader is left

    @contextmanager
    def lease(self) -> Iterator[Path]:
        """A home whose catalog file holds the catalog as of now, kept while the caller reads it."""
        owner = _owner.owner_of(self.catalog.path)
        if owner is None:
            yield self.catalog.home
            return
        with self._lock:
            copy = self._newest
            if copy is None or copy.generation != owner.generation:
                copy = self._take(owner)
                old, self._newest = self._newest, copy
                if old is not None and old.readers == 0:
                    _remove(old)
            copy.readers += 1
        try:
            yield copy.home
        finally:
            with self._lock:
                copy.readers -= 1
                if copy is not self._newest and copy.readers == 0:
                    _remove(copy)

    def _take(self, owner: _owner.Owner) -> _Copy:
        with owner.write_lock:  # no transaction commits (nor checkpoints) while the files are copied
            generation = owner.generation
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                home = Path(tempfile.mkdtemp(prefix=f"g{generation}-", dir=self.root))
                source = self.catalog.path
                for path in (source, source.with_name(source.name + ".wal")):
                    if path.exists():
                        shutil.copyfile(path, home / path.name)
            except OSError as exc:
                if "home" in locals():
                    shutil.rmtree(home, ignore_errors=True)
                raise DraftsetError(
                    f"cannot copy the catalog for the SQL console: {exc.strerror or exc}",
                    hint=f"free disk space under {self.root.parent}",
                ) from None
        return _Copy(home, generation)

    def close(self) -> None:
        with self._lock:
            self._newest = None
        shutil.rmtree(self.root, ignore_errors=True)


def _remove(copy: _Copy) -> None:
    shutil.rmtree(copy.home, ignore_errors=True)
