"""The `draftset` command. Each area registers its commands from its own module.

pipeline's own modules are imported here; the floors above pipeline (eval) are found through the
`draftset.commands` entry-point group declared in pyproject.toml, so no import runs back up.
"""

from __future__ import annotations

import errno
import sys
from importlib.metadata import entry_points

import typer

from catalog.errors import DraftsetError
from pipeline.cli import adapters_cmd, data_cmd, draft_cmd, find_cmd, hub_cmd, model_cmd, regen_cmd, serve_cmd, sql_cmd
from pipeline.cli.common import err_console, safe

app = typer.Typer(
    name="draftset",
    help="Find, vet and prepare training data for EAGLE-3 draft models of a large target model.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    # Present only so a lone command is still a subcommand (typer collapses single-command apps).
    pass


COMMAND_GROUP = "draftset.commands"


def _register_all(target: typer.Typer) -> None:
    # Registration order; `--help` lists plain commands first, then the groups (hub, adapters, model, check).
    for module in (hub_cmd, find_cmd, sql_cmd, adapters_cmd, data_cmd, regen_cmd, model_cmd, draft_cmd, serve_cmd):
        module.register(target)
    # Then every installed package's commands (eval: report, check), in entry-point name order.
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        entry.load()(target)


_register_all(app)


# OS errors a user can fix themselves; anything else is a bug and keeps its traceback.
_OS_HINTS = {
    errno.ENOSPC: "free disk space (or point DRAFTSET_HOME at a bigger disk), then re-run: stages resume by id",
    errno.EDQUOT: "free space within your quota, then re-run: stages resume by id",
    errno.EACCES: "check the permissions of that path, or set DRAFTSET_HOME to a folder you can write",
    errno.EROFS: "set DRAFTSET_HOME to a writable file system",
}


def _fail(message: str, hint: str | None) -> None:
    # Messages quote Hub answers, card text and file names: printed literally, secrets redacted.
    err_console.print(f"[bold red]error:[/] {safe(message)}", highlight=False)
    if hint:
        err_console.print(f"[yellow]next:[/] {safe(hint)}", highlight=False)
    sys.exit(1)


def main() -> None:
    """Entry point: user-facing errors become one red line plus what to do next (exit 1)."""
    try:
        app()  # standalone: click prints usage errors itself
    except DraftsetError as exc:
        _fail(str(exc), exc.hint)
    except BrokenPipeError:  # `draftset sql ... | head`: the reader left; nothing to report
        sys.stderr.close()
        sys.exit(0)
    except OSError as exc:
        if exc.errno not in _OS_HINTS:
            raise
        _fail(f"{exc.strerror}: {exc.filename or ''}".rstrip(": "), _OS_HINTS[exc.errno])


if __name__ == "__main__":
    main()
