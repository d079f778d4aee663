"""Helpers shared by every CLI module: settings, catalog handle, console and table printing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.settings import Settings

# One --tokenizer option for every command that measures token lengths (dedup, mix, report).
TOKENIZER_OPTION = typer.Option(None, "--tokenizer", help="Target tokenizer folder (tokenizer.json) for prompt lengths; "
                                "default: the toy target if built, else a chars/4 estimate.")

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings()


def catalog() -> Catalog:
    return Catalog(settings().home)


def resolve_named(name_or_path: str, kind: str) -> Path:
    """A path as given, else a name under $DRAFTSET_HOME/<kind>/ (`captures` or `drafts`)."""
    path = Path(name_or_path)
    if path.exists():
        return path
    root = Home(settings().home).kind_root(kind)
    under = root / name_or_path
    if under.exists():
        return under
    raise DraftsetError(f"{name_or_path!r} is neither a directory nor a name under {root}",
                        hint=f"list them with: ls {root}")


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False, header_style="bold")
    for col in columns:
        table.add_column(str(col), overflow="fold")
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print(table)
