"""CLI commands for this area (being written)."""

import typer


def register(app: typer.Typer) -> None:
    pass
