"""The stages' registry: a stage is a package of pipeline/ whose config.py declares its `StageConfig`
subclass. That folder convention is the whole registration; lists of stages (the layering test, the settings
test, the service's hook for stage options) come from `stage_configs()`, never from a list written by hand.

A new stage is one new package (config.py with its settings model, run.py with its `Stage`) plus its tests.
Importing a config.py is light (pydantic only, no torch), so this works in every install.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pipeline
from pipeline.stage import StageConfig

# The packages of pipeline/ that are shell or servers, not stages or the rooms stages stand on.
SHELL_ROOMS = ("cli", "servers")


def rooms() -> list[str]:
    """Every sub-package of pipeline/ below the shell: the stages and the rooms they stand on."""
    return sorted(i.name for i in pkgutil.iter_modules(pipeline.__path__) if i.ispkg and i.name not in SHELL_ROOMS)


def stage_configs() -> dict[str, type[StageConfig]]:
    """Stage name (its package) → its settings model: the one `...Config` class its config.py declares
    (nested parts of it, such as regenerate's `Partition`, are StageConfigs too, but not named so)."""
    found: dict[str, type[StageConfig]] = {}
    for room in rooms():
        if not (Path(pipeline.__path__[0]) / room / "config.py").exists():
            continue
        module = importlib.import_module(f"pipeline.{room}.config")
        models = [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj)
            and issubclass(obj, StageConfig)
            and obj is not StageConfig
            and obj.__module__ == module.__name__
            and obj.__name__.endswith("Config")
        ]
        if len(models) > 1:
            names = ", ".join(m.__name__ for m in models)
            raise RuntimeError(f"pipeline/{room}/config.py declares {names}: one settings model per stage")
        if models:
            found[room] = models[0]
    return found
