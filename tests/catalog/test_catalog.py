"""The catalog: idempotent migrations and upserts, a clear busy error, and a read-only SQL path."""

from __future__ import annotations

import csv
import io
import json

import pytest

from catalog.db import Catalog, migrations, upsert
from catalog.errors import CatalogBusy, CatalogReadOnly, DraftsetError
from catalog.sql import run_readonly

CORE_TABLES = {
    "search_runs",
    "agent_runs",
    "candidates",
    "schemas",
    "adapters",
    "plans",
    "plan_items",
    "stage_runs",
    "dedup",
}


def _tables(cat: Catalog) -> set[str]:
    return {r["name"] for r in cat.query("SELECT table_name AS name FROM information_schema.tables")}


def test_migrations_are_idempotent(home):
    cat = Catalog(home)
    cat.migrate()
    first = cat.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
    cat.migrate()
    again = cat.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
    assert again == first  # nothing re-applied, nothing re-stamped
    assert [r["version"] for r in first] == [v for v, _, _ in migrations()]
    assert CORE_TABLES <= _tables(cat)


def test_failed_migration_names_the_file_and_keeps_the_previous_version(home, monkeypatch):
    cat = Catalog(home)
    cat.migrate()
    before = cat.query("SELECT version FROM schema_migrations")
    broken = migrations() + [(9999, "broken", "CREATE TABLE half_done (x INTEGER); SELEC oops;")]
    monkeypatch.setattr("catalog.db.migrations", lambda: broken)
    with pytest.raises(DraftsetError, match="9999_broken.sql"):
        cat.migrate()
    monkeypatch.undo()
    assert cat.query("SELECT version FROM schema_migrations") == before
    assert "half_done" not in _tables(cat)


def test_upsert_is_idempotent_and_keeps_unnamed_columns(home):
    cat = Catalog(home)
    row = {"repo_id": "lab/chat", "score": 0.5, "license": "mit", "tags": ["chat", "sft"]}
    assert cat.upsert("candidates", [row]) == 1
    cat.upsert("candidates", [row])
    assert cat.query("SELECT count(*) AS n FROM candidates")[0]["n"] == 1
    cat.upsert("candidates", [{"repo_id": "lab/chat", "score": 0.9}])  # a partial row updates only score
    [stored] = cat.query("SELECT score, license, tags FROM candidates")
    assert stored["score"] == 0.9 and stored["license"] == "mit"
    assert json.loads(stored["tags"]) == ["chat", "sft"]


def test_upsert_refuses_rows_with_different_columns(home):
    with pytest.raises(ValueError, match="different columns"):
        Catalog(home).upsert("candidates", [{"repo_id": "a/b", "score": 1.0}, {"repo_id": "c/d"}])


def test_writer_rolls_back_everything_on_error(home):
    cat = Catalog(home)
    with pytest.raises(RuntimeError):
        with cat.writer() as con:
            upsert(con, "stage_runs", [{"run_id": "r1", "stage": "ingest"}])
            upsert(con, "candidates", [{"repo_id": "a/b"}])
            raise RuntimeError("stage crashed")
    assert cat.query("SELECT * FROM stage_runs") == [] and cat.query("SELECT * FROM candidates") == []


def test_second_writer_process_gets_catalog_busy_and_file_stays_intact(home, held_writer):
    contender = Catalog(home, busy_timeout_s=0.3)
    with pytest.raises(CatalogBusy, match="catalog is busy") as err:
        contender.upsert("stage_runs", [{"run_id": "late", "stage": "ingest"}])
    assert err.value.hint
    held_writer.stdin.close()
    assert held_writer.stdout.read().strip() == "released"
    assert held_writer.wait(timeout=30) == 0
    runs = contender.query("SELECT run_id FROM stage_runs")
    assert runs == [{"run_id": "held"}]  # the holder committed; the refused write left nothing
    assert contender.upsert("stage_runs", [{"run_id": "late", "stage": "ingest"}]) == 1


def test_sql_while_a_writer_holds_the_lock_says_busy(home, held_writer, draftset):
    result = draftset("sql", "SELECT 1")
    assert result.returncode == 1, result.stderr
    assert "catalog is busy" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO candidates (repo_id) VALUES ('evil/repo')",
        "DELETE FROM candidates",
        "CREATE TABLE evil (x INTEGER)",
        "ATTACH '{home}/other.duckdb' AS other",
        "COPY candidates TO '{home}/dump.csv'",
    ],
)
def test_sql_cli_cannot_write(home, draftset, statement):
    cat = Catalog(home)
    cat.upsert("candidates", [{"repo_id": "lab/chat", "score": 0.5}])
    before = sorted(p.name for p in home.iterdir())
    result = draftset("sql", statement.format(home=home))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: draftset sql is read-only") and lines[1].startswith("next:")
    assert cat.query("SELECT repo_id, score FROM candidates") == [{"repo_id": "lab/chat", "score": 0.5}]
    assert sorted(p.name for p in home.iterdir()) == before


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE candidates SET score = 0",
        "DROP TABLE candidates",
        "SELECT 1; DELETE FROM candidates",
        "COPY (SELECT * FROM candidates) TO '{home}/dump.parquet' (FORMAT parquet)",
        "EXPORT DATABASE '{home}/export'",
        "CREATE TEMP TABLE scratch AS SELECT 1",
        "SET enable_external_access = true",
        "INSTALL httpfs",
        "SELECT * FROM read_csv('{outside}')",
        "SELECT * FROM read_text('{outside}')",
    ],
)
def test_sql_path_refuses_writes_settings_and_outside_files(home, tmp_path, statement):
    outside = tmp_path / "secret.csv"
    outside.write_text("token\nhf_do_not_read\n")
    cat = Catalog(home)
    cat.upsert("candidates", [{"repo_id": "lab/chat", "score": 0.5}])
    before = sorted(p.name for p in home.iterdir())
    with pytest.raises(CatalogReadOnly, match="draftset sql"):
        run_readonly(cat, statement.format(home=home, outside=outside))
    assert cat.query("SELECT repo_id, score FROM candidates") == [{"repo_id": "lab/chat", "score": 0.5}]
    assert sorted(p.name for p in home.iterdir()) == before


def test_sql_formats(home, draftset):
    Catalog(home).upsert("candidates", [{"repo_id": "lab/a", "score": 0.25}, {"repo_id": "lab/b", "score": 0.75}])
    query = "SELECT repo_id, score FROM candidates ORDER BY repo_id"
    as_csv = draftset("sql", query, "--format", "csv")
    assert as_csv.returncode == 0, as_csv.stderr
    assert list(csv.reader(io.StringIO(as_csv.stdout))) == [["repo_id", "score"], ["lab/a", "0.25"], ["lab/b", "0.75"]]
    as_json = draftset("sql", query, "--format", "json")
    assert json.loads(as_json.stdout) == [{"repo_id": "lab/a", "score": 0.25}, {"repo_id": "lab/b", "score": 0.75}]
    as_table = draftset("sql", query)
    assert as_table.returncode == 0
    body = as_table.stdout
    assert "repo_id" in body and "lab/b" in body and "0.75" in body and "2 row(s)" in body


def test_sql_reads_show_and_describe(home):
    cat = Catalog(home)
    cat.migrate()
    _, rows = run_readonly(cat, "SHOW TABLES")
    assert CORE_TABLES <= {r[0] for r in rows}
    _, described = run_readonly(cat, "DESCRIBE candidates")
    assert ("repo_id", "VARCHAR") == described[0][:2]


def test_sql_errors_are_user_errors(home):
    cat = Catalog(home)
    with pytest.raises(DraftsetError, match="no catalog"):
        run_readonly(cat, "SELECT 1")
    cat.migrate()
    with pytest.raises(DraftsetError, match="query failed"):
        run_readonly(cat, "SELEC 1")
    with pytest.raises(DraftsetError, match="query failed: Catalog Error"):
        run_readonly(cat, "SELECT * FROM no_such_table")
    with pytest.raises(CatalogReadOnly):
        run_readonly(cat, "PRAGMA enable_profiling")


def test_a_file_that_is_not_a_catalog_is_not_reported_as_busy(home):
    (home / "catalog.duckdb").write_bytes(b"this is not a duckdb file" * 100)
    with pytest.raises(DraftsetError, match="cannot open catalog") as err:
        Catalog(home, busy_timeout_s=0.2).upsert("candidates", [{"repo_id": "a/b"}])
    assert not isinstance(err.value, CatalogBusy)


def test_each_error_kind_carries_its_http_status_whatever_its_wording():
    from catalog.errors import CatalogBusy, DraftsetError, NotFound, QueryStopped

    assert DraftsetError("no such thing, in words").http_status == 400  # the wording decides nothing
    assert NotFound("lab/x has no row 9").http_status == 404 and CatalogBusy("held").http_status == 503
    assert QueryStopped("query stopped: time limit 5 s").http_status == 503  # a cause is a flag, not a word
    assert QueryStopped("query stopped: x", timed_out=True).http_status == 408
