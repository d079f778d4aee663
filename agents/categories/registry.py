"""The search agents' registry: every module under agents/categories/briefs/ declares one `CATEGORY`, and
that is the whole registration. Counts and lists elsewhere (find's agents, the service's table, tests, docs)
come from CATEGORIES, never from a number written down.

Discovery is by module name, sorted, so the order is stable on every machine; a module whose CATEGORY is
missing, or whose key differs from its file name, stops the import with one line naming the file.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from agents.categories import briefs
from agents.categories.category import Category


class RegistryError(RuntimeError):
    """A brief module that does not declare one well-formed category."""


def discover(package: ModuleType = briefs) -> tuple[Category, ...]:
    """Every category a module of `package` declares, sorted by module name."""
    where = package.__name__.replace(".", "/")
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        category = getattr(module, "CATEGORY", None)
        if not isinstance(category, Category):
            raise RegistryError(f"{where}/{info.name}.py declares no CATEGORY = Category(...)")
        if category.key != info.name:
            raise RegistryError(
                f"{where}/{info.name}.py declares key {category.key!r}: the key is the file name, "
                "so each category has one home"
            )
        found.append(category)
    if not found:
        raise RegistryError(f"{where}/ declares no category")
    return tuple(found)
