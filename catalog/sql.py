"""`draftset sql`: read-only queries over the catalog, printed as a table, CSV or JSON.

Three layers keep the review path read-only: the statement types are checked before anything runs
(one clear message), the connection is opened read-only (DuckDB refuses writes to the catalog), and
that connection has no file-system access (so COPY TO, ATTACH, EXPORT or read_csv cannot write or
read files beside the catalog).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import duckdb

from catalog.db import Catalog, first_line
from catalog.errors import CatalogReadOnly, DraftsetError

# SHOW, DESCRIBE, SUMMARIZE and FROM-first queries parse as SELECT.
ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
READ_ONLY_HINT = "use the draftset commands (adapters approve/reject/edit, find, ...) to change the catalog"


def check_read_only(query: str) -> None:
    """Refuse any statement that is not a query, before it reaches the database."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise DraftsetError(f"query failed: {first_line(exc)}",
                            hint='`draftset sql "SHOW TABLES"` lists the tables') from exc
    if not statements:
        raise DraftsetError("empty query", hint='for example: draftset sql "SELECT * FROM candidates"')
    for statement in statements:
        if statement.type not in ALLOWED:
            kind = statement.type.name.replace("_STATEMENT", "")
            raise CatalogReadOnly(f"draftset sql is read-only: {kind} statements are refused "
                                  "(only SELECT, SHOW, DESCRIBE, EXPLAIN)", hint=READ_ONLY_HINT)


def run_readonly(catalog: Catalog, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Execute `query` on a read-only connection; writing statements fail with CatalogReadOnly."""
    check_read_only(query)
    with catalog.reader() as con:
        try:
            cur = con.execute(query)
        except (duckdb.InvalidInputException, duckdb.PermissionException) as exc:
            text = str(exc).lower()
            if "file system operations are disabled" in text:
                raise CatalogReadOnly(f"draftset sql reads the catalog only, not files: {first_line(exc)}",
                                      hint="query the catalog tables; `draftset sql \"SHOW TABLES\"` lists them") from exc
            if "read-only" in text or "read only" in text:
                raise CatalogReadOnly(f"draftset sql is read-only: {first_line(exc)}", hint=READ_ONLY_HINT) from exc
            raise DraftsetError(f"query failed: {first_line(exc)}") from exc
        except duckdb.Error as exc:
            raise DraftsetError(f"query failed: {first_line(exc)}",
                                hint='`draftset sql "SHOW TABLES"` lists the tables') from exc
        if cur.description is None:
            return [], []
        return [d[0] for d in cur.description], cur.fetchall()


def format_csv(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


def format_json(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    return json.dumps([dict(zip(columns, row)) for row in rows], default=str, indent=2)
