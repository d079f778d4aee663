"""The floors of the house: no import runs back up, the inner rules of pipeline/ hold, and eval's commands still
reach `draftset`."""

from __future__ import annotations

import ast
from pathlib import Path

from pipeline.stages import SHELL_ROOMS, stage_configs
from pipeline.stages import rooms as stage_rooms

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


# pipeline/ inside: the stages (and the rooms they stand on) below the shell, the servers beside it. The rooms
# come from pipeline/stages.py (every package but the shell's): a new stage is held to this without an edit here.
SHELL = ("agents", *(f"pipeline.{room}" for room in SHELL_ROOMS), "pipeline.demo", "pipeline.demo_real", "eval")


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, dotted, at any depth (imports inside functions count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _reaches(module: str, room: str) -> bool:
    return module == room or module.startswith(room + ".")


def test_a_stage_never_imports_agents_the_cli_or_the_servers():
    rooms = [ROOT / "pipeline" / room for room in stage_rooms()]
    assert set(stage_configs()) <= set(stage_rooms()) and {"stage", "train"} <= set(stage_rooms())
    assert all((ROOT / "pipeline" / room).is_dir() for room in SHELL_ROOMS)  # a renamed shell room: rename it there
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for room in rooms
        for path in sorted(room.rglob("*.py"))
        for module in sorted(_imported_modules(path))
        if any(_reaches(module, shell) for shell in SHELL)
    ]
    assert wrong == []


def test_the_local_hub_imports_only_the_ground_floor():
    """The Hub and the server plumbing it shares with the other servers (pipeline/servers/http.py, so that
    file too is held to the ground floor)."""
    hub = ROOT / "pipeline" / "servers" / "localhub"
    plumbing = ROOT / "pipeline" / "servers" / "http.py"
    ours = {"catalog", "adapters", "agents", "pipeline", "eval"}
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in [*sorted(hub.rglob("*.py")), plumbing]
        for module in sorted(_imported_modules(path))
        if module.split(".")[0] in ours
        and not _reaches(module, "catalog")
        and not _reaches(module, "pipeline.servers.localhub")
        and not _reaches(module, "pipeline.servers.http")
    ]
    assert wrong == []


def test_eval_registers_its_own_commands():
    from typer.main import get_command

    from pipeline.cli.app import app

    root = get_command(app)
    assert {"report", "check"} <= set(root.commands)
    assert set(root.commands["check"].commands) == {"draft", "accept-length", "serve", "estimate", "pilot"}


def test_eval_specdecode_stands_below_eval_checks():
    """The decode (eval/specdecode) is the instrument the checks (eval/checks) build on: never the reverse,
    or the two rooms import each other."""
    folder = ROOT / "eval" / "specdecode"
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(folder.rglob("*.py"))
        for module in sorted(_imported_modules(path))
        if _reaches(module, "eval.checks") or _reaches(module, "eval.cli")
    ]
    assert wrong == []


def test_every_design_section_the_code_cites_is_in_the_repository():
    """Code cites DESIGN.md by section ("Hidden-state layer ids"): the document lives here, and each cited
    section heading exists in it."""
    import re

    design = (ROOT / "DESIGN.md").read_text(encoding="utf-8")
    cited = {
        m.group(1)
        for folder in ("catalog", "adapters", "agents", "pipeline", "eval", "tests")
        for path in (ROOT / folder).rglob("*.py")
        for m in re.finditer(r'DESIGN\.md,? "([^"]+)"', path.read_text(encoding="utf-8"))
    }
    assert cited, "no citation found: the pattern no longer matches how code cites the design"
    missing = [section for section in sorted(cited) if section not in design]
    assert missing == []
