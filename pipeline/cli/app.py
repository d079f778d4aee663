"""The `draftset` command. Each area registers its commands from its own module."""

from __future__ import annotations

import sys

import typer

from catalog.errors import DraftsetError
from pipeline.cli import (adapters_cmd, data_cmd, draft_cmd, find_cmd, hub_cmd, model_cmd, regen_cmd,
                          sql_cmd)
from pipeline.cli.common import err_console

app = typer.Typer(
    name="draftset",
    help="Find, vet and prepare training data for EAGLE-3 draft models of a large target model.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

@app.callback()
def _root() -> None:
    """Find, vet and prepare training data for EAGLE-3 draft models of a large target model."""


# Order here is the order of the user journey in `draftset --help`.
for module in (hub_cmd, find_cmd, sql_cmd, adapters_cmd, data_cmd, regen_cmd, model_cmd, draft_cmd):
    module.register(app)


def main() -> None:
    """Entry point: user-facing errors become one red line plus what to do next (exit 1)."""
    try:
        app()  # standalone: click prints usage errors itself
    except DraftsetError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        if exc.hint:
            err_console.print(f"[yellow]next:[/] {exc.hint}", highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
