"""`draftset sql`: read-only queries over the catalog, printed as a table, CSV or JSON.

Three layers keep the review path read-only: the statement types are checked before anything runs
(one clear message), the connection cannot write (a read-only connection, or inside the service a
`BEGIN TRANSACTION READ ONLY` cursor, refused by DuckDB's transaction manager whatever the parser
missed, e.g. DML inside a CTE), and that connection has no file-system access (so COPY TO, ATTACH,
EXPORT or read_csv cannot write or read files beside the catalog).

A `Watch` bounds one statement: a time limit, and `cancel()` from any thread (client gone, shutdown)
both end it through DuckDB's `interrupt()`; `cancel_all()` stops every statement still running.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import duckdb

from catalog.db import Catalog, first_line
from catalog.errors import CatalogReadOnly, DraftsetError, QueryStopped
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
    if len(statements) > 1:  # each check (read-only, secrets, limits) is made on one statement, the one that runs
        raise DraftsetError(
            f"one statement per query: this one has {len(statements)}", hint="send each statement on its own"
        )


def _check_text(query: str) -> None:
    # argv that is not UTF-8 arrives with lone surrogates (surrogateescape); DuckDB would raise on it.
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DraftsetError(
            f"the query is not valid UTF-8 text (byte {exc.start})", hint="retype the query in a UTF-8 terminal"
        ) from None


class Interruptible(Protocol):
    """What a Watch stops: a DuckDB connection (interrupt()), or the child running a statement (killed)."""

    def interrupt(self) -> None: ...


class Watch:
    """One statement's bounds: `timeout_s` (None: none) and `cancel(why)` from any thread.

    DuckDB's interrupt() ends the statement at its next check (milliseconds, also mid-fetch); the
    error the statement then raises names why it stopped (QueryStopped), never "Interrupted!"."""

    def __init__(self, timeout_s: float | None = None, stated_s: float | None = None):
        self.timeout_s = timeout_s
        self.stated_s = stated_s if stated_s is not None else timeout_s  # the limit as the user knows it
        self.why: str | None = None
        self._con: Interruptible | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def cancel(self, why: str) -> None:
        with self._lock:
            if self.why is None:
                self.why = why
            con = self._con
        if con is not None:
            con.interrupt()

    def check(self) -> None:
        """Raise QueryStopped when cancelled (between batches: interrupt() only reaches a running call)."""
        if self.why is not None:
            raise stopped(self)

    @contextmanager
    def running(self, con: Interruptible) -> Iterator[None]:
        with self._lock:
            self._con = con
        with _LIVE_LOCK:
            _LIVE.add(self)
        if self.timeout_s is not None:
            self._timer = threading.Timer(self.timeout_s, self.cancel, (f"time limit of {self.stated_s:g} s",))
            self._timer.daemon = True
            self._timer.start()
        try:
            self.check()  # cancelled before it started (shutdown, a client gone while it queued)
            yield
        finally:
            if self._timer is not None:
                self._timer.cancel()
            with _LIVE_LOCK:
                _LIVE.discard(self)
            with self._lock:
                self._con = None


_LIVE: set[Watch] = set()
_LIVE_LOCK = threading.Lock()


def cancel_all(why: str = "the service is shutting down") -> int:
    """Interrupt every statement running under a Watch in this process; how many there were."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for watch in live:
        watch.cancel(why)
    return len(live)


def out_of_memory(detail: str) -> QueryStopped:
    """The named refusal of a statement that needed more memory than it may use (the same query fails again)."""
    return QueryStopped(
        f"query stopped: it needed more memory than the SQL console allows ({detail})",
        hint="narrow the query (fewer rows, smaller strings or lists, a LIMIT before an aggregate)",
        out_of_memory=True,
    )


def stopped(watch: Watch) -> QueryStopped:
    why = watch.why or "cancelled"
    hint = (
        "narrow the query (a WHERE, a LIMIT, fewer joins), or ask an operator for a longer limit"
        if why.startswith("time limit")
        else None
    )
    return QueryStopped(f"query stopped: {why}", hint=hint, timed_out=why.startswith("time limit"))


# Secrets a viewer's query may not read. Checked on the text (a filter by name) and on DuckDB's physical
# plan (SELECT *, positional #3, COLUMNS(regex), query_table('users') all resolve to the column there);
# table functions that take SQL as text or expose column statistics are refused outright.
SECRET_COLUMNS = ("token_hash",)
_SECRET_FUNCTIONS = re.compile(r"\b(query|query_table|pragma_storage_info|storage_info)\s*\(", re.I)


def _check_secrets(con: duckdb.DuckDBPyConnection, query: str) -> None:
    text = query.lower()
    named = next((c for c in SECRET_COLUMNS if c in text), None)
    if named is None and _SECRET_FUNCTIONS.search(query):
        named = _SECRET_FUNCTIONS.search(query).group(1)  # type: ignore[union-attr]
    if named is None:
        try:
            plans = con.execute("EXPLAIN (FORMAT json) " + query).fetchall()
        except duckdb.Error:
            return  # the query itself reports its error
        plan = " ".join(str(row[-1]) for row in plans).lower()
        named = next((c for c in SECRET_COLUMNS if c in plan), None)
    if named is not None:
        raise CatalogReadOnly(
            f"this query reads {named}, which only operators may read",
            hint="select the columns you need by name (users: name, role, created_at, disabled_at)",
        )


@contextmanager
def open_query(
    catalog: Catalog, query: str, watch: Watch | None = None, hide_secrets: bool = False
) -> Iterator[tuple[list[str], duckdb.DuckDBPyConnection | None]]:
    """Run `query` read-only; yields (columns, cursor to fetch from) while the connection is open.
    Rows are fetched by the caller in batches, so a 4M-row answer is never held in memory at once.
    `watch` bounds it (time limit, cancel); `hide_secrets` refuses reading SECRET_COLUMNS."""
    _check_text(query)
    check_read_only(query)
    watch = watch or Watch()
    with catalog.reader() as con, watch.running(con):
        try:
            if hide_secrets:
                _check_secrets(con, query)
            cur = con.execute(query)
        except duckdb.InterruptException as exc:
            raise stopped(watch) from exc
        except duckdb.OutOfMemoryException as exc:
            raise out_of_memory(first_line(exc)) from exc
        except duckdb.TransactionException as exc:
            if "read-only" in str(exc).lower():
                raise CatalogReadOnly(f"draftset sql is read-only: {first_line(exc)}", hint=READ_ONLY_HINT) from exc
            raise DraftsetError(f"query failed: {first_line(exc)}") from exc
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
            try:
                yield [d[0] for d in cur.description], cur
            except duckdb.InterruptException as exc:
                raise stopped(watch) from exc


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
        except duckdb.InterruptException:
            raise  # open_query names why it stopped
        except duckdb.OutOfMemoryException as exc:
            raise out_of_memory(first_line(exc)) from exc
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
