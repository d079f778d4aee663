"""Helpers shared by every CLI module: settings, catalog handle, console and table printing.

Catalog and card text is untrusted: a card can hold `[/bold]` (rich markup, which crashes or restyles
output) or terminal escape sequences (which move the cursor, retitle the window, hide text). Every
value that did not come from our own code goes through `safe()` (inside markup f-strings) or
`literal()` (a rich Text, never parsed as markup); `print_table` makes every cell literal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import annotated_types
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.names import closest
from catalog.untrusted import clean_text, redact
from pipeline.settings import settings
from pipeline.stage import StageConfig, field_default

# --config FILE on every stage command: the stage's config fields, under the flags given explicitly.
CONFIG_OPTION = typer.Option(
    None,
    "--config",
    help="JSON, TOML or YAML file of this stage's config fields; flags given on the command line override it.",
    dir_okay=False,
)


def field_option(model: type[StageConfig], name: str, *decls: str, help: str, **kwargs: Any) -> Any:
    """A flag for one field of a stage's config model. Its default stays None, so a --config file's value shows
    through when the flag is left out; the default shown in --help and the range checked come from the model's
    Field (the numbers are written once, there)."""
    info = model.model_fields[name]
    default = field_default(model, name)
    is_int = int in (getattr(info.annotation, "__args__", None) or (info.annotation,))
    for meta in info.metadata:  # ge/le/gt/lt on the Field: the same range, checked before anything runs
        if isinstance(meta, annotated_types.Ge):
            kwargs.setdefault("min", meta.ge)
        elif isinstance(meta, annotated_types.Gt):  # an int's open bound is the next int; the model checks floats
            kwargs.setdefault("min", int(cast(int, meta.gt)) + 1 if is_int else meta.gt)
        elif isinstance(meta, annotated_types.Le):
            kwargs.setdefault("max", meta.le)
        elif isinstance(meta, annotated_types.Lt):
            kwargs.setdefault("max", int(cast(int, meta.lt)) - 1 if is_int else meta.lt)
    shown = f" (default: {default})" if default is not None and not isinstance(default, bool) else ""
    return typer.Option(None, *(decls or (f"--{name.replace('_', '-')}",)), help=help + shown, **kwargs)


# One --tokenizer option for every command that measures token lengths (dedup, mix, report).
TOKENIZER_OPTION = typer.Option(
    None,
    "--tokenizer",
    help="Target tokenizer folder (tokenizer.json) for prompt lengths; "
    "default: the toy target if built, else a chars/4 estimate.",
)

# Piped output is not wrapped at rich's default 80 columns (repo ids and reasons would fold mid-word);
# a terminal keeps its own width, and COLUMNS still wins when set.
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240)
err_console = Console(stderr=True, soft_wrap=True)


def catalog() -> Catalog:
    return Catalog(settings().home)


def resolve_named(name_or_path: str, kind: str) -> Path:
    """A path as given, else a name among a home's builds, captures or drafts (`Home.kind_root`)."""
    path = Path(name_or_path)
    if path.exists():
        return path
    root = Home(settings().home).kind_root(kind)
    under = root / name_or_path
    if under.exists():
        return under
    names = sorted(d.name for d in root.iterdir() if d.is_dir()) if root.is_dir() else []
    near = closest(name_or_path, names)
    raise DraftsetError(
        f"{name_or_path!r} is neither a directory nor a name under {root}"
        + (f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else "")
        + (f" (known: {', '.join(names[:12])})" if names else " (none yet)"),
        hint=f"list them with: ls {root}",
    )


def safe(value: Any, secrets: bool = True) -> str:
    """Untrusted text for a markup f-string: control characters and escape sequences removed, markup
    escaped, and tokens/keys redacted (an error body may echo them)."""
    text = clean_text("" if value is None else str(value))
    return escape(redact(text) if secrets else text)


def literal(value: Any, style: str = "") -> Text:
    """Untrusted text as a rich Text: printed exactly (no markup parsing), control characters removed,
    tokens and keys redacted (agent errors quote endpoint answers)."""
    return Text(redact(clean_text("" if value is None else str(value))), style=style)


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    """A table whose headers, cells and title are printed literally (no markup, no escape sequences)."""
    table = Table(title=literal(title) if title is not None else None, show_lines=False, header_style="bold")
    for col in columns:
        table.add_column(literal(col), overflow="fold")
    for row in rows:
        table.add_row(*[literal(v) for v in row])
    console.print(table)
