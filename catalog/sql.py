"""`draftset sql`: read-only queries over the catalog, printed as a table, CSV or JSON.

Three layers keep the review path read-only: the statement types are checked before anything runs
(one clear message), the connection is opened read-only (DuckDB refuses writes to the catalog), and
that connection has no file-system access (so COPY TO, ATTACH, EXPORT or read_csv cannot write or
read files beside the catalog).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import duckdb

from catalog.db import Catalog, first_line
from catalog.errors import CatalogReadOnly, DraftsetError
from catalog.untrusted import clean_text

# SHOW, DESCRIBE, SUMMARIZE and FROM-first queries parse as SELECT.
ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
READ_ONLY_HINT = "use the draftset commands (adapters approve/reject/edit, find, ...) to change the catalog"


def check_read_only(query: str) -> None:
    """Refuse any statement that is not a query, before it reaches the database."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise DraftsetError(
            f"query failed: {first_line(exc)}", hint='`draftset sql "SHOW TABLES"` lists the tables'
        ) from exc
    if not statements:
        raise DraftsetError("empty query", hint='for example: draftset sql "SELECT * FROM candidates"')
    for statement in statements:
        if statement.type not in ALLOWED:
            kind = statement.type.name.replace("_STATEMENT", "")
            raise CatalogReadOnly(
                f"draftset sql is read-only: {kind} statements are refused (only SELECT, SHOW, DESCRIBE, EXPLAIN)",
                hint=READ_ONLY_HINT,
            )


def _check_text(query: str) -> None:
    # argv that is not UTF-8 arrives with lone surrogates (surrogateescape); DuckDB would raise on it.
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DraftsetError(
            f"the query is not valid UTF-8 text (byte {exc.start})", hint="retype the query in a UTF-8 terminal"
        ) from None


@contextmanager
def open_query(catalog: Catalog, query: str) -> Iterator[tuple[list[str], duckdb.DuckDBPyConnection | None]]:
    """Run `query` read-only; yields (columns, cursor to fetch from) while the connection is open.
    Rows are fetched by the caller in batches, so a 4M-row answer is never held in memory at once."""
    _check_text(query)
    check_read_only(query)
    with catalog.reader() as con:
        try:
            cur = con.execute(query)
        except (duckdb.InvalidInputException, duckdb.PermissionException) as exc:
            text = str(exc).lower()
            if "file system operations are disabled" in text:
                raise CatalogReadOnly(
                    f"draftset sql reads the catalog only, not files: {first_line(exc)}",
                    hint='query the catalog tables; `draftset sql "SHOW TABLES"` lists them',
                ) from exc
            if "read-only" in text or "read only" in text:
                raise CatalogReadOnly(f"draftset sql is read-only: {first_line(exc)}", hint=READ_ONLY_HINT) from exc
            raise DraftsetError(f"query failed: {first_line(exc)}") from exc
        except duckdb.Error as exc:
            raise DraftsetError(
                f"query failed: {first_line(exc)}", hint='`draftset sql "SHOW TABLES"` lists the tables'
            ) from exc
        if cur.description is None:
            yield [], None
        else:
            yield [d[0] for d in cur.description], cur


class RowSource(Protocol):
    """What iter_rows reads: a DuckDB cursor, or the service client's rows (pipeline.servers.service.client)."""

    def fetchmany(self, size: int, /) -> list[tuple[Any, ...]]: ...


def iter_rows(cursor: RowSource | None, limit: int | None, batch: int = 2048) -> Iterator[tuple[Any, ...]]:
    """Rows in batches, at most `limit` (None: all). A failure mid-stream is one DraftsetError."""
    if cursor is None:
        return
    produced = 0
    while limit is None or produced < limit:
        want = batch if limit is None else min(batch, limit - produced)
        try:
            rows = cursor.fetchmany(want)
        except duckdb.Error as exc:
            raise DraftsetError(f"query failed while reading its rows: {first_line(exc)}") from exc
        if not rows:
            return
        yield from rows
        produced += len(rows)


def run_readonly(catalog: Catalog, query: str, limit: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Execute `query` on a read-only connection; writing statements fail with CatalogReadOnly."""
    with open_query(catalog, query) as (columns, cursor):
        return columns, list(iter_rows(cursor, limit))


def csv_lines(columns: list[str], rows: Iterable[tuple[Any, ...]]) -> Iterator[str]:
    """CSV, one line (record) at a time; control characters cleaned so a cell cannot drive the terminal."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in itertools.chain([columns], rows):
        writer.writerow([clean_text(v) if isinstance(v, str) else v for v in row])
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()


def json_chunks(columns: list[str], rows: Iterable[tuple[Any, ...]]) -> Iterator[str]:
    """A JSON array streamed object by object (json.dumps escapes every control character)."""
    yield "["
    for i, row in enumerate(rows):
        body = json.dumps(dict(zip(columns, row)), default=str, indent=2)
        yield ("," if i else "") + "\n  " + body.replace("\n", "\n  ")
    yield "\n]\n"
