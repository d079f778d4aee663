"""The catalog: one DuckDB file under $DRAFTSET_HOME, versioned migrations, one writer API.

DuckDB allows a single read-write process per file. Writers therefore hold the file only for the
duration of one `with catalog.writer()` block, so a long stage never locks out `draftset sql` or
`draftset status` for more than a moment; a writer that cannot get the lock within `busy_timeout_s`
gets `CatalogBusy`, never a corrupted file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from catalog import owner as _owner
from catalog.errors import CatalogBusy, DraftsetError
from catalog.home import Home


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def _through_service_hint(url: str) -> str:
    """What to do while the service holds the file; never "export" what the shell has already exported."""
    if os.environ.get("DRAFTSET_SERVER"):  # set, yet this command opened the file: it is one that runs locally
        return (
            "this command works on the local catalog only, not through DRAFTSET_SERVER; "
            f"run it while the service at {url} is stopped (every read command and ingest go through the service)"
        )
    return (
        f"go through it: export DRAFTSET_SERVER={url} DRAFTSET_TOKEN=<your token> (every read command, find, "
        "ingest and adapter review go through the service), or stop the service"
    )


def first_line(exc: BaseException) -> str:
    """The first line of an error's text: DuckDB messages run on with links and context."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every file in catalog/migrations, in version order."""
    found = []
    for entry in resources.files("catalog.migrations").iterdir():
        if entry.name.endswith(".sql"):
            version, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(version), name, entry.read_text()))
    return sorted(found)


def _to_db(value: Any) -> Any:
    """Python value → DuckDB parameter; dicts and lists go into JSON columns as text."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str, sort_keys=True)
    return value


class Catalog:
    """Handle on `<home>/catalog.duckdb`. Cheap to create; opens the file only when used."""

    def __init__(
        self, home: Path | str, busy_timeout_s: float = 5.0, *, read_settings: dict[str, str | int] | None = None
    ):
        self.home = Path(home)
        self.path = Home(home).catalog_file
        self.busy_timeout_s = busy_timeout_s
        # DuckDB settings of its read-only connections (the SQL console's capped child: memory_limit, threads)
        self.read_settings = dict(read_settings or {})

    # -- writing -----------------------------------------------------------------------------
    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction, with migrations applied."""
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DraftsetError(
                f"cannot create draftset home {self.home}: {exc.strerror}",
                hint="set DRAFTSET_HOME to a writable folder",
            ) from exc
        owner = _owner.owner_of(self.path)
        if owner is not None:  # the service holds the file: one writer at a time on its instance
            with owner.write_lock:
                try:
                    yield from _transaction(owner.con.cursor())
                finally:
                    owner.generation += 1
            return
        con = self._connect(read_only=False)
        try:
            self._migrate(con)
        except BaseException:
            con.close()
            raise
        yield from _transaction(con)

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """Open the file, retrying while another process holds the lock, up to `busy_timeout_s`.

        DuckDB has no busy-wait of its own across processes, hence the retry loop. Read-only
        connections are also cut off from the file system (no COPY TO, ATTACH, read_csv('/etc/..'),
        INSTALL) and cannot re-enable it: the review path reads the catalog and nothing else.
        """
        config: dict[str, str | bool | int | float | list[str]] = (
            {**self.read_settings, "enable_external_access": False, "lock_configuration": True} if read_only else {}
        )
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only, config=config)
            except duckdb.IOException as exc:
                if not _is_lock_error(exc):
                    raise DraftsetError(
                        f"cannot open catalog {self.path}: {first_line(exc)}",
                        hint="check DRAFTSET_HOME points at a draftset home",
                    ) from exc
                service = _owner.running_service(self.home)
                if service is not None:  # the team service holds it for its lifetime: say so at once
                    raise CatalogBusy(
                        f"catalog is busy: draftset serve (pid {service['pid']}) at {service['url']} owns {self.path}",
                        hint=_through_service_hint(service["url"]),
                    ) from exc
                if time.monotonic() >= deadline:
                    pid = _owner.pid_in_lock_error(exc)
                    who = _owner.describe_pid(pid) if pid is not None else "another draftset process"
                    raise CatalogBusy(
                        f"catalog is busy: {who} is using {self.path}",
                        hint="wait for it to finish (draftset status names the holder), then retry",
                    ) from exc
                time.sleep(0.05)
            except (duckdb.Error, OSError) as exc:
                raise DraftsetError(
                    f"cannot open catalog {self.path}: {first_line(exc)}",
                    hint="check DRAFTSET_HOME points at a draftset home and the disk is writable",
                ) from exc

    @staticmethod
    def _migrate(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)"
        )
        done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, sql in migrations():
            if version in done:
                continue
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, name, datetime.now()])
            except duckdb.Error as exc:
                con.execute("ROLLBACK")
                raise DraftsetError(
                    f"catalog migration {version:04d}_{name}.sql failed: {first_line(exc)}",
                    hint="fix the migration file; the catalog was left at the previous version",
                ) from exc
            con.execute("COMMIT")

    def migrate(self) -> None:
        with self.writer():
            pass

    def upsert(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """Insert rows, or update the given columns of rows whose primary key exists. Idempotent.

        Columns not named in `rows` keep their stored values (DuckDB's INSERT OR REPLACE updates only
        the inserted columns), so callers may upsert a partial row, e.g. just a status."""
        if not rows:
            return 0
        with self.writer() as con:
            return upsert(con, table, rows)

    # -- reading -----------------------------------------------------------------------------
    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection: the review path can never modify the catalog."""
        if not self.path.exists():
            raise DraftsetError(
                f"no catalog at {self.path}",
                hint='run `draftset find "<domain>"` first, or set DRAFTSET_HOME to an existing home',
            )
        owner = _owner.owner_of(self.path)
        if owner is not None:
            # A cursor of the service's instance in a read-only transaction: DuckDB's transaction
            # manager refuses any write (DML inside a CTE included), whatever a parser check missed.
            cur = owner.con.cursor()
            try:
                cur.execute("BEGIN TRANSACTION READ ONLY")
                yield cur
            finally:
                try:
                    cur.execute("ROLLBACK")
                finally:
                    cur.close()
            return
        con = self._connect(read_only=True)
        try:
            yield con
        finally:
            con.close()

    def own(self) -> _owner.Owner:
        """Hold the catalog open read-write for this process's lifetime (the service); migrates first."""
        self.home.mkdir(parents=True, exist_ok=True)

        def connect() -> duckdb.DuckDBPyConnection:
            con = self._connect(read_only=False)
            self._migrate(con)
            return con

        return _owner.own(self.path, connect)

    def release(self) -> None:
        _owner.release(self.path)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Run a read-only query and return rows as dicts (JSON columns stay text)."""
        return self.query_all([(sql, params)])[0]

    def query_all(self, statements: Sequence[tuple[str, Sequence[Any] | None]]) -> list[list[dict[str, Any]]]:
        """Several read-only queries on one connection, one snapshot (opening the file is most of a small
        query's cost: an adapter and its flags are read together)."""
        with self.reader() as con, _owner.read_slot(self.path):
            out = []
            for sql, params in statements:
                cur = con.execute(sql, params or [])
                names = [d[0] for d in cur.description]
                out.append([dict(zip(names, row)) for row in cur.fetchall()])
            return out


def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN ... COMMIT around the caller's block (ROLLBACK when it raises); `con` is closed either way."""
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        con.close()


def upsert(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[dict[str, Any]]) -> int:
    """Upsert on an open writer connection (for several tables in one transaction)."""
    if not rows:
        return 0
    columns = list(rows[0].keys())
    for row in rows:
        if list(row.keys()) != columns:
            raise ValueError(f"upsert into {table}: rows have different columns")
    placeholders = ", ".join("?" for _ in columns)
    sql = f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"
    con.executemany(sql, [[_to_db(row[c]) for c in columns] for row in rows])
    return len(rows)
