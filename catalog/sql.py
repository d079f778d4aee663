"""`draftset sql`: read-only queries over the catalog, printed as a table, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import duckdb

from catalog.db import Catalog
from catalog.errors import CatalogReadOnly, DraftsetError


def run_readonly(catalog: Catalog, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Execute `query` on a read-only connection; writing statements fail with CatalogReadOnly."""
    with catalog.reader() as con:
        try:
            cur = con.execute(query)
        except duckdb.InvalidInputException as exc:
            if "read-only" in str(exc).lower() or "read only" in str(exc).lower():
                raise CatalogReadOnly(
                    "draftset sql is read-only: the catalog cannot be changed from the review path",
                    hint="use the draftset commands (adapters approve/reject/edit, find, ...) to change it",
                ) from exc
            raise DraftsetError(f"query failed: {exc}") from exc
        except duckdb.Error as exc:
            raise DraftsetError(f"query failed: {exc}", hint="`draftset sql \"SHOW TABLES\"` lists tables") from exc
        if cur.description is None:
            return [], []
        return [d[0] for d in cur.description], cur.fetchall()


def format_csv(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


def format_json(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    return json.dumps([dict(zip(columns, row)) for row in rows], default=str, indent=2)
