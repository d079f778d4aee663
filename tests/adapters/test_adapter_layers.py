"""The floors inside adapters/, in the order the data flows: the core types (the modules at the top of adapters/)
below everything, then read → map → infer → prove → review. A module imports the core and the floors below its
own, never one above: so no two sub-packages import each other."""

from __future__ import annotations

from pathlib import Path

from tests.test_layers import _imported_modules  # the one AST import reader of the layering tests

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "adapters"
FLOORS = ("read", "map", "infer", "prove", "review")  # lowest first


def _floor_of(module: str) -> int | None:
    """The floor an `adapters.<floor>...` module stands on (its index in FLOORS), None for the core or outside."""
    parts = module.split(".")
    if parts[0] != "adapters" or len(parts) < 2 or parts[1] not in FLOORS:
        return None
    return FLOORS.index(parts[1])


def test_the_sub_packages_are_the_floors_named_here():
    packages = sorted(d.name for d in ADAPTERS.iterdir() if (d / "__init__.py").exists())
    assert packages == sorted(FLOORS), "a new sub-package of adapters/: give it its place in FLOORS"


def test_no_import_in_adapters_runs_up_a_floor():
    wrong = []
    for path in sorted(ADAPTERS.rglob("*.py")):
        relative = path.relative_to(ADAPTERS).parts
        own = FLOORS.index(relative[0]) if len(relative) > 1 else -1  # -1: the core, below every floor
        for module in sorted(_imported_modules(path)):
            floor = _floor_of(module)
            if floor is not None and floor > own:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert wrong == []
