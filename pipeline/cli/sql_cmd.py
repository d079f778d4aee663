"""`draftset sql`: the read-only review path over the catalog."""

from __future__ import annotations

from enum import Enum

import typer

from catalog.sql import format_csv, format_json, run_readonly
from pipeline.cli.common import catalog, console, print_table


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def sql(query: str = typer.Argument(..., help="A SQL query over the catalog (read-only)."),
        format: Format = typer.Option(Format.table, "--format", "-f", help="table | csv | json")) -> None:
    """Query the catalog read-only (tables: search_runs, agent_runs, candidates, schemas, adapters,
    plans, plan_items, stage_runs, dedup). Writing statements are refused."""
    from pipeline.servers.service.client import remote

    client = remote()  # DRAFTSET_SERVER: the running service owns the catalog, ask it
    columns, rows = client.sql(query) if client else run_readonly(catalog(), query)
    if format is Format.csv:
        typer.echo(format_csv(columns, rows), nl=False)
    elif format is Format.json:
        typer.echo(format_json(columns, rows))
    else:
        print_table(columns, rows)
        console.print(f"[dim]{len(rows)} row(s)[/]")


def register(app: typer.Typer) -> None:
    app.command("sql")(sql)
