"""Helpers shared by every CLI module: settings, catalog handle, console and table printing.

Catalog and card text is untrusted: a card can hold `[/bold]` (rich markup, which crashes or restyles
output) or terminal escape sequences (which move the cursor, retitle the window, hide text). Every
value that did not come from our own code goes through `safe()` (inside markup f-strings) or
`literal()` (a rich Text, never parsed as markup); `print_table` makes every cell literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import annotated_types
import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.names import closest
from catalog.untrusted import clean_text, redact
from pipeline.cli import as_json
from pipeline.cli.consoles import console, err_console  # noqa: F401 - re-exported: every command prints through them
from pipeline.settings import settings
from pipeline.stage import StageConfig, field_default
from pipeline.stage.config import inherited_fields

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
    # an inherited setting's model default is only a fallback (the stage decides): its help says where it comes from
    plain = default is not None and not isinstance(default, bool) and name not in inherited_fields(model)
    shown = f" (default: {default})" if plain else ""
    return typer.Option(None, *(decls or (f"--{name.replace('_', '-')}",)), help=help + shown, **kwargs)


# One --tokenizer option for every command that measures token lengths (dedup, mix, report).
TOKENIZER_OPTION = typer.Option(
    None,
    "--tokenizer",
    help="Target tokenizer folder (tokenizer.json) for prompt lengths; "
    "default: the toy target if built, else a chars/4 estimate.",
)


def catalog() -> Catalog:
    """This machine's catalog. In team mode (DRAFTSET_SERVER set) the catalog is the service's: a command that
    reaches here did not go through it, so it is local-only and stops with the reason (pipeline/cli/team.py)."""
    from pipeline.cli.team import require_local

    require_local()
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


# A cell that must never be split across lines: a number (1,234 · 0.86 · 3.1 GB · 12%) or an id-like token
# (owner/name, a hash, a run id). Prose columns fold instead; when even the unbreakable columns do not fit,
# the rightmost columns are left out and named under the table. Hand-written: rich folds or ellipsises
# cells but never leaves a column out, and its widths do not know a number from prose.
_NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+(?:\s?(?:%|[KMGTP]?B|h|s|ms|tok/s|×))?$")
_TOKEN = re.compile(r"^\S{1,80}$")
_PROSE_MIN = 10  # a prose column narrower than this reads as a column of fragments


def timestamp(value: Any) -> Any:
    """A timestamp as the local catalog gives it (a datetime), also when it came through the service as ISO
    text: a table prints the same either way."""
    from datetime import datetime

    return datetime.fromisoformat(value) if isinstance(value, str) and value else value


def cell_text(value: Any) -> str:
    """How a table shows a value: ints with thousands separators, None as empty, the rest as str."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, dict):  # counts by reason: `too_large=3, malformed=1` (--json keeps the mapping)
        return ", ".join(f"{k}={cell_text(v)}" for k, v in value.items()) or "-"
    return str(value)


# --json on every listing: the emitter lives in pipeline/cli/as_json.py; these names are its, re-exported.
JSON_OPTION, json_listing, json_output = as_json.JSON_OPTION, as_json.json_listing, as_json.json_output


def _kind(cells: list[str]) -> str:
    filled = [c for c in cells if c not in ("", "-")]
    if filled and all(_NUMBER.match(c) for c in filled):
        return "number"
    if filled and all(_TOKEN.match(c) for c in filled):
        return "token"
    return "prose"


def _fitting(need: list[int], room: int) -> list[int]:
    """The columns shown in `room`: callers order columns by importance, so the rightmost goes first."""
    shown = list(range(len(need)))
    while len(shown) > 1 and sum(need[i] + 3 for i in shown) > room:
        shown.pop()
    return shown


def _owner_split(cell: str) -> tuple[str, ...] | None:
    """A repo id as two whole words, "owner/" and "name", for a table too narrow for it on one line (a cell
    folded anywhere else could be copied as a different id); None when the cell is not one."""
    owner, slash, name = cell.partition("/")
    if cell in ("", "-"):
        return ()
    return (owner + slash, name) if slash and owner and name and "/" not in name and " " not in cell else None


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    title: str | None = None,
    *,
    width: int | None = None,
    records: Sequence[dict[str, Any]] | None = None,
) -> None:
    """A table whose headers, cells and title are printed literally (no markup, no escape sequences), that
    never splits a number or an id: those columns keep their width, prose folds, and the columns that cannot
    fit are dropped from the right (named in a line under the table). Under `json_output`: collected instead,
    as `records` when given: the raw values behind cells the table formats (bytes, counts, seconds; the unit
    in the key's name, e.g. `file_bytes`, `eta_s`), so JSON carries numbers, never "67.2 GB" or "19,332"."""
    if as_json.collect(columns, rows, title, records):
        return
    texts = [[cell_text(v) for v in row] for row in rows]
    cols = [[row[i] if i < len(row) else "" for row in texts] for i in range(len(columns))]
    kinds = [_kind(c) for c in cols]
    need = [
        max([len(str(h)), *(len(x) for x in c)]) if k != "prose" else min(_PROSE_MIN, max([len(str(h)), 1]))
        for h, c, k in zip(columns, cols, kinds, strict=True)
    ]
    room = (width or console.width) - 1
    shown = _fitting(need, room)
    split = [
        i for i in range(len(columns)) if kinds[i] == "token" and all(_owner_split(x) is not None for x in cols[i])
    ]
    narrower = [
        max([len(str(columns[i])), *(len(part) for x in cols[i] for part in _owner_split(x) or ())])
        if i in split
        else n
        for i, n in enumerate(need)
    ]
    if len(_fitting(narrower, room)) > len(shown):  # a repo id broken after its owner keeps a column in view
        need, shown = narrower, _fitting(narrower, room)
        for row in texts:
            for i in split:
                row[i] = "\n".join(_owner_split(row[i]) or (row[i],))
    table = Table(title=literal(title) if title is not None else None, show_lines=False, header_style="bold")
    for i in shown:
        if kinds[i] == "prose":
            table.add_column(literal(columns[i]), overflow="fold", min_width=need[i])
        else:
            table.add_column(
                literal(columns[i]),
                no_wrap=True,
                min_width=need[i],
                justify="right" if kinds[i] == "number" else "left",
            )
    for row in texts:
        table.add_row(*[literal(row[i] if i < len(row) else "") for i in shown])
    console.print(table, width=width)
    hidden = [str(columns[i]) for i in range(len(columns)) if i not in shown]
    if hidden:
        console.print(
            literal(
                f"({len(hidden)} column(s) left out at this width: {', '.join(hidden)}; widen the "
                "terminal, or pipe the output, to see them)"
            ),
            style="dim",
        )
