"""Tests mirror the packages: every package of the five has its tests in the same path under tests/ (a folder
with at least one test file), or is named below with the folder that tests it and why, and a test there imports
it. A package holding only data (SQL migrations) needs no folder of its own."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("catalog", "adapters", "agents", "pipeline", "eval")

# package → (the test folder that tests it, why there)
ELSEWHERE = {
    "catalog/hub": ("tests/pipeline/servers/localhub", "the Hub client is tested against the local Hub server"),
    "eval": ("tests/eval/specdecode", "forecast_pilot's pilot trains and decodes with the specdecode fixtures"),
    "eval/report": ("tests/pipeline", "its tests build a mix with tests/pipeline's fixtures first"),
    "pipeline/rows": ("tests/pipeline/dedup", "the row keys are dedup's normalisation and hashes"),
    "pipeline/servers/devserver": ("tests/pipeline/model", "the dev server runs the toy model those fixtures build"),
    "agents/categories/briefs": ("tests/agents/categories", "the briefs are the registry's declarations"),
}


def _packages() -> list[str]:
    return sorted(str(init.parent.relative_to(ROOT)) for top in TOP for init in (ROOT / top).rglob("__init__.py"))


def _code_only_in_init(package: str) -> bool:
    return not [p for p in (ROOT / package).glob("*.py") if p.name != "__init__.py"] and not [
        d for d in (ROOT / package).iterdir() if (d / "__init__.py").exists()
    ]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update({node.module, *(f"{node.module}.{a.name}" for a in node.names)})
    return found


def _tests(folder: Path) -> list[Path]:
    return sorted(folder.glob("test_*.py"))


def test_every_package_has_its_tests_in_the_mirrored_folder_or_says_where():
    missing = []
    for package in _packages():
        if package in ELSEWHERE:
            continue
        if _code_only_in_init(package):
            continue  # data only (catalog/migrations: SQL files the catalog's tests apply)
        if not _tests(ROOT / "tests" / package):
            missing.append(package)
    assert missing == [], "add tests/<package>/test_*.py, or name the folder that tests it in ELSEWHERE"


def test_each_package_tested_elsewhere_is_imported_by_a_test_there():
    wrong = []
    for package, (folder, why) in ELSEWHERE.items():
        assert why and (ROOT / package / "__init__.py").exists(), f"{package}: no longer a package"
        dotted = package.replace("/", ".")
        files = [*_tests(ROOT / folder), *sorted((ROOT / folder).glob("conftest.py"))]
        if not any(m == dotted or m.startswith(dotted + ".") for f in files for m in _imports(f)):
            wrong.append(f"{package}: no test in {folder} imports it")
    assert wrong == []
