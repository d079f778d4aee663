"""Answers computed from the catalog, kept until the next write (the owner's write generation).

Reading and validating adapter specs is Python work (pydantic) that 50 readers would otherwise repeat on
every request; the catalog only changes through this process's writers, which bump the generation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from catalog.db import Catalog
from catalog.owner import owner_of

_MAX = 256


class Cache:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self._values: dict[Any, tuple[int, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        owner = owner_of(self.catalog.path)
        if owner is None:  # not the owning process: another may write at any time
            return compute()
        generation = owner.generation
        hit = self._values.get(key)
        if hit is not None and hit[0] == generation:
            return hit[1]
        value = compute()
        with self._lock:
            if len(self._values) >= _MAX:
                self._values.clear()
            self._values[key] = (generation, value)
        return value
