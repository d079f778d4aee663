"""Helpers shared by every CLI module: settings, catalog handle, console and table printing."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Sequence

from rich.console import Console
from rich.table import Table

from catalog import Catalog
from pipeline.settings import Settings

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings()


def catalog() -> Catalog:
    return Catalog(settings().home)


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False, header_style="bold")
    for col in columns:
        table.add_column(str(col), overflow="fold")
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print(table)
