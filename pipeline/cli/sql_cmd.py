"""`draftset sql`: the read-only review path over the catalog, streamed.

Rows are fetched in batches and written as they come (csv/json), so a 4M-row answer never sits in
memory; a default cap (stated on stderr when hit) keeps an accidental `SELECT *` from flooding the
terminal. The table format needs every row to size its columns, so it is capped the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from enum import Enum
from typing import Any

import typer

from catalog.sql import csv_lines, iter_rows, json_chunks, open_query
from pipeline.cli.common import catalog, console, err_console, print_table

DEFAULT_LIMIT = 10_000


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def sql(
    query: str = typer.Argument(..., help="A SQL query over the catalog (read-only)."),
    format: Format = typer.Option(Format.table, "--format", "-f", help="table | csv | json"),
    as_json: bool = typer.Option(False, "--json", help="The same as --format json (the flag every listing has)."),
    limit: int = typer.Option(
        DEFAULT_LIMIT, "--limit", min=0, help=f"Print at most this many rows (default {DEFAULT_LIMIT:,}; 0: no cap)."
    ),
) -> None:
    """Query the catalog read-only (tables: search_runs, agent_runs, candidates, schemas, adapters,
    plans, plan_items, stage_runs, dedup; view candidate_status). Writing statements are refused."""
    from pipeline.servers.service.client import remote

    format = Format.json if as_json else format
    cap = limit or None
    shown, more = 0, False
    client = remote()  # DRAFTSET_SERVER: the running service owns the catalog, ask it
    opened = client.open_query(query, None if cap is None else cap + 1) if client else open_query(catalog(), query)
    with opened as (columns, cursor):
        # One row more than the cap tells whether the cap was hit, without counting the whole answer.
        rows = iter_rows(cursor, None if cap is None else cap + 1)

        def capped() -> Iterator[tuple[Any, ...]]:
            nonlocal shown, more
            for row in rows:
                if cap is not None and shown >= cap:
                    more = True
                    return
                shown += 1
                yield row

        if format is Format.csv:
            for line in csv_lines(columns, capped()):
                sys.stdout.write(line)
        elif format is Format.json:
            for chunk in json_chunks(columns, capped()):
                sys.stdout.write(chunk)
        else:
            print_table(columns, list(capped()))
    sys.stdout.flush()
    if format is Format.table:
        console.print(f"[dim]{shown} row(s)[/]")
    if more:
        err_console.print(
            f"[yellow]stopped at the {cap:,}-row cap[/]: the query has more rows; raise it with "
            "--limit N, or --limit 0 for all (csv/json stream them)",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("sql")(sql)
