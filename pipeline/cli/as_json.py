"""`--json` on every listing: the same data as a command's tables, as one JSON document on stdout.

The one emitter. A command takes `as_json: bool = JSON_OPTION` and calls `json_listing(as_json)` at its top
(or wraps its body in `with json_output(as_json)`); print_table (pipeline/cli/common.py) then hands its tables
here instead of drawing them, every other line the command prints goes to stderr, and the document is printed
when the command returns. A table may give `records`: the raw values behind the cells it formats (bytes,
counts, seconds, with the unit in the key's name), so JSON carries numbers, never "67.2 GB" or "19,332".
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from typing import Any

import typer

# typer 0.29 vendors click: the running command's context is its copy's (as app.py's exceptions are).
from typer._click.globals import get_current_context

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document (the tables' data) instead of tables.")
_tables: list[dict[str, Any]] | None = None


def collect(
    columns: Sequence[Any], rows: Iterable[Sequence[Any]], title: str | None, records: Sequence[dict[str, Any]] | None
) -> bool:
    """Under json_output: keep this table ({title, columns, rows: [{column: value}]}) and say so (True)."""
    if _tables is None:
        return False
    if records is not None:
        keys = list(dict.fromkeys(json_key(k) for r in records for k in r))
        _tables.append(
            {"title": title, "columns": keys, "rows": [{json_key(k): v for k, v in r.items()} for r in records]}
        )
        return True
    names = [json_key(c) for c in columns]
    _tables.append({"title": title, "columns": names, "rows": [dict(zip(names, row, strict=False)) for row in rows]})
    return True


def json_key(name: Any) -> str:
    """A column's heading as a key a script can name: snake_case ("dedup dropped" -> "dedup_dropped",
    "tok/s" -> "tok_s"); headings are display text, JSON keys are not."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_") or "value"


@contextmanager
def json_output(enabled: bool, **extra: Any) -> Iterator[dict[str, Any]]:
    """Within: tables are collected (and `extra`, which the command may fill in); on exit, one JSON document
    {"tables": [{"title", "columns", "rows": [{column: value}]}], **extra} is printed to stdout."""
    global _tables
    if not enabled:
        yield extra
        return
    from pipeline.cli.consoles import console

    _tables, was, stdout = [], console.stderr, sys.stdout
    console.stderr = True  # rich resolves sys.stderr at each print: the stream pytest or a pipe gave
    ended: typer.Exit | None = None
    try:
        with redirect_stdout(sys.stderr):  # a stage's own print() (progress lines) must not land in the JSON
            yield extra
    except typer.Exit as exc:  # an intended exit (a check's verdict, exit 1): its tables are still the answer
        ended = exc
    finally:
        tables, _tables, console.stderr = _tables, None, was
    stdout.write(json.dumps({"tables": tables, **extra}, default=str, ensure_ascii=False) + "\n")
    if ended is not None:
        raise ended


def json_listing(enabled: bool) -> dict[str, Any]:
    """`json_output` for the rest of the running command, in one line at its top (no body to re-indent):
    held by the command's click context, so the document is printed when the command returns, and nothing
    is printed when it fails (the error goes to stderr alone). Returns the document's `extra` dict."""
    ctx = get_current_context(silent=True)
    if ctx is None:  # called as a plain function (not through the CLI): nothing to scope the document to
        if enabled:
            raise RuntimeError("json_listing(True) outside a running command")
        return {}
    return ctx.with_resource(json_output(enabled))
