"""The floors of the house: no import runs back up, and eval's commands still reach `draftset`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each top-level package and the packages it may import (DESIGN.md, "Top-level layout").
MAY_IMPORT = {
    "catalog": set(),
    "adapters": {"catalog"},
    "agents": {"catalog", "adapters"},
    "pipeline": {"catalog", "adapters", "agents"},
    "eval": {"catalog", "adapters", "agents", "pipeline"},
}


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & set(MAY_IMPORT)


def test_no_import_runs_back_up():
    wrong = []
    for package, allowed in MAY_IMPORT.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for target in sorted(_imported_packages(path) - allowed - {package}):
                wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert wrong == []


def test_eval_registers_its_own_commands():
    from typer.main import get_command

    from pipeline.cli.app import app

    root = get_command(app)
    assert {"report", "check"} <= set(root.commands)
    assert set(root.commands["check"].commands) == {"draft", "accept-length", "serve", "estimate", "pilot"}
