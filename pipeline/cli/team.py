"""Team mode (DRAFTSET_SERVER set): which commands go through the service, and the one line for those that cannot.

Through the service (pipeline/servers/service/client.py): sql, status, find, ingest, adapters
list/show/preview/propose/test/approve/reject/map, users add/list/remove. The commands below work on this machine's
files and record into its catalog, so in team mode they stop before any work (`guard_local_only` makes
`require_local()` their first step when the CLI is assembled; `common.catalog()` catches any command not listed),
with why and what to do instead: the team's catalog is the service's, and opening a local one would either fail on
the service's lock or quietly use another catalog.
Commands that open no catalog (hub, serve-dev, model fetch/import, export, report, check serve/estimate) run
here as they always do. The stages the service runs as jobs (mix ... check draft) say so in their refusal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from catalog.errors import DraftsetError

# Why each local-only command cannot go through the service, and what to run instead. A command not listed
# gets the general reason; every entry is checked against the registered commands (tests/pipeline/servers/).
LOCAL_ONLY: dict[str, tuple[str, str]] = {
    "adapters edit": (
        "it opens the spec YAML in an editor on this machine",
        "set role labels through the service: draftset adapters map REPO LABEL=ROLE",
    ),
    "dedup": ("it reads and writes the ingested shards under DRAFTSET_HOME on this machine", ""),
    "mix": ("it reads the ingested shards and writes data/mix/ under DRAFTSET_HOME on this machine", ""),
    "regenerate": ("it reads data/mix/ and writes data/regen/ under DRAFTSET_HOME on this machine", ""),
    "capture": ("it runs the target on this machine's GPUs and writes under DRAFTSET_HOME here", ""),
    "train": ("it trains on this machine's GPUs and writes under DRAFTSET_HOME here", ""),
    "check draft": ("it measures a draft on this machine and records the result in this machine's catalog", ""),
    "check accept-length": ("it decodes with a draft on this machine and records the result in its catalog", ""),
    "check pilot": ("it trains and measures pilots on this machine and records them in its catalog", ""),
    "build": ("it renders this machine's data/regen/ or data/mix/ into data/build/ under DRAFTSET_HOME", ""),
}
GENERAL = "it works on the files under DRAFTSET_HOME on this machine"
# Local-only commands whose stage the service runs as a job on its own home (pipeline/servers/service/stages.py).
SERVICE_JOB = {
    "mix": "mix",
    "regenerate": "regenerate",
    "build": "build",
    "capture": "capture",
    "train": "train",
    "check draft": "check",
}


def command_path() -> str:
    """`draftset adapters propose`: the command being run, as the user typed its name."""
    from typer._click.globals import get_current_context  # typer 0.29 ships its own click (see app.py)

    ctx = get_current_context(silent=True)
    words = ctx.command_path.split()[1:] if ctx is not None else []
    return " ".join(["draftset", *words])


def require_local() -> None:
    """First line of every local-only command: in team mode it stops before any other check or work."""
    from pipeline.settings import settings

    url = settings().server_url
    if url:
        raise refuse_local(url)


def refuse_local(server_url: str) -> DraftsetError:
    """The one-line error for a local-only command run with DRAFTSET_SERVER set."""
    name = command_path()
    why, instead = LOCAL_ONLY.get(name.removeprefix("draftset "), (GENERAL, ""))
    if (kind := SERVICE_JOB.get(name.removeprefix("draftset "))) is not None:
        instead = (
            f"run it as a job of the service on its home: {server_url.rstrip('/')}/stages#stage-{kind} "
            f"(POST /api/stages/{kind})"
        )
    return DraftsetError(
        f"`{name}` is local-only: {why}, and DRAFTSET_SERVER={server_url} is set, so the catalog is the service's",
        hint=(instead + "; or " if instead else "")
        + "run it without DRAFTSET_SERVER on a home of its own (on the service's host, while the service is stopped)",
    )


def guard_local_only(app: typer.Typer) -> None:
    """Make `require_local()` the first step of every LOCAL_ONLY command of `app` (its groups included), so the
    refusal comes before the command's own checks and work, and this table is the one list of them."""

    def guard(info: Any, name: str) -> None:
        if name not in LOCAL_ONLY or info.callback is None:
            return
        inner: Callable[..., Any] = info.callback

        @functools.wraps(inner)  # typer reads the parameters through __wrapped__
        def first_require_local(*args: Any, **kwargs: Any) -> Any:
            require_local()
            return inner(*args, **kwargs)

        info.callback = first_require_local

    for command in app.registered_commands:
        guard(command, command.name or "")
    for group in app.registered_groups:
        for command in group.typer_instance.registered_commands if group.typer_instance else ():
            guard(command, f"{group.name} {command.name}")
