"""Faults every command must turn into one line: disk full (as the OS, SQLite and DuckDB report it),
quota, permissions; secrets in an echoed error body redacted; a remote-code tokenizer refused."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.errors import DraftsetError
from pipeline.cli.app import os_failure

ROOT = Path(__file__).resolve().parents[2]


def _real_enospc() -> OSError:
    try:
        with open("/dev/full", "w") as fh:
            fh.write("x" * 10)
            fh.flush()
    except OSError as exc:
        return exc
    pytest.skip("/dev/full did not refuse the write")


def _real_sqlite_full(tmp_path) -> sqlite3.OperationalError:
    con = sqlite3.connect(tmp_path / "tiny.sqlite")
    con.execute("PRAGMA max_page_count = 2")
    try:
        con.execute("CREATE TABLE t (x)")
        for _ in range(1000):
            con.execute("INSERT INTO t VALUES (?)", ["x" * 4000])
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        con.close()
    pytest.fail("sqlite never filled up")


def test_disk_full_is_recognised_however_a_library_reports_it(tmp_path):
    enospc = _real_enospc()
    assert enospc.errno == errno.ENOSPC and "No space left" in os_failure(enospc)[0]
    full = _real_sqlite_full(tmp_path)  # what find's LangGraph checkpointer raises
    assert "No space left" in os_failure(full)[0]
    wrapped = RuntimeError("graph failed")
    wrapped.__cause__ = ExceptionGroup("agents", [ValueError("x"), full])
    assert os_failure(wrapped) is not None
    import duckdb

    assert os_failure(duckdb.IOException('IO Error: Could not write file "c.duckdb": No space left on device'))
    assert os_failure(ValueError("a bug")) is None


FAILING_WRITER = """
import sys, duckdb
from catalog import db
def full(self):
    raise duckdb.IOException('IO Error: Could not write file "catalog.duckdb.wal": No space left on device')
db.Catalog.writer = full
db.Catalog.upsert = lambda self, table, rows: full(self)
sys.argv = ["draftset", *sys.argv[1:]]
from pipeline.cli.app import main
main()
"""


@pytest.mark.parametrize(
    "args", [["find", "agentic coding", "--propose", "0"], ["adapters", "propose", "h4-mini/ultrachat-mini"]]
)
def test_disk_full_is_one_line_for_every_command(hub_url, tmp_path, args):
    env = {**os.environ, "DRAFTSET_HOME": str(tmp_path / "home"), "HF_ENDPOINT": hub_url, "COLUMNS": "200"}
    (tmp_path / "home").mkdir()
    result = subprocess.run(
        [sys.executable, "-c", FAILING_WRITER, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "No space left on device" in result.stderr, result.stderr[-2000:]
    assert "next:" in result.stderr


ECHO_ERROR = """
import os, sys
from catalog.errors import DraftsetError
from pipeline.cli import app as cli
@cli.app.command("echo-fail")
def echo_fail():
    body = '{"error": "invalid key ' + os.environ["OPENAI_API_KEY"] + '", "auth": "Bearer ' + os.environ["HF_TOKEN"] + '"}'
    raise DraftsetError("endpoint answered 401: " + body)
sys.argv = ["draftset", "echo-fail"]
cli.main()
"""


def test_secrets_in_an_echoed_error_body_are_redacted(tmp_path):
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-live-4f9a8b7c6d5e4f3a2b1c",
        "HF_TOKEN": "hf_SecretTokenValue123456",
        "DRAFTSET_HOME": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-c", ECHO_ERROR], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "401" in result.stderr
    assert "4f9a8b7c6d5e" not in result.stderr and "SecretTokenValue" not in result.stderr, result.stderr


def test_remote_code_tokenizer_is_refused_in_one_line(tmp_path):
    from pipeline.target.tokenizer import load_chat_tokenizer

    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "EvilTokenizer",
                "auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]},
            }
        )
    )
    (tmp_path / "tokenization_evil.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(DraftsetError, match="needs remote code") as exc:
        load_chat_tokenizer(tmp_path)
    assert "\n" not in str(exc.value)
