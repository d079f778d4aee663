"""Catalog and card text printed literally through the real CLI (subprocesses): rich markup and terminal
escapes from the catalog never crash or reach the terminal; `sql` streams, caps and states its cap."""

from __future__ import annotations

import os
import subprocess
import sys

from catalog import Catalog
from catalog.untrusted import clean_text, redact
from tests.catalog.conftest import ROOT

HOSTILE = "[/bold] [red]x[/red] \x1b]0;pwned\x07\x1b[2J\x9b31m \u202eevil [link=file:///etc/passwd]y[/link]"


def _seed(home) -> None:
    Catalog(home).upsert("candidates", [{"repo_id": "lab/evil", "card_summary": HOSTILE, "license": "[/red]"}])


def test_sql_prints_markup_and_escapes_literally_in_every_format(home, draftset):
    _seed(home)
    for fmt in ("table", "csv", "json"):
        result = draftset("sql", "SELECT repo_id, card_summary, license FROM candidates", "--format", fmt)
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out and "\u202e" not in out, fmt
        assert ("[/bold]" in out and "[/red]" in out) or fmt == "json", (fmt, out)


def test_errors_quoting_hostile_text_are_one_literal_line(home, draftset):
    _seed(home)
    result = draftset("sql", 'SELECT * FROM "[/red]\x1b[2J"')
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "[/red]" in result.stderr and "\x1b[2J" not in result.stderr


def test_sql_streams_with_a_stated_default_cap_and_limit(home, draftset):
    _seed(home)
    capped = draftset("sql", "SELECT range AS n FROM range(12000)", "--format", "csv")
    assert capped.returncode == 0 and len(capped.stdout.splitlines()) == 1 + 10_000
    assert "10,000-row cap" in capped.stderr
    everything = draftset("sql", "SELECT range AS n FROM range(12000)", "-f", "csv", "--limit", "0")
    assert len(everything.stdout.splitlines()) == 1 + 12_000 and "cap" not in everything.stderr
    few = draftset("sql", "SELECT range AS n FROM range(12000)", "--limit", "3")
    assert "3 row(s)" in few.stdout and "3-row cap" in few.stderr


def test_non_utf8_query_is_one_line(home):
    _seed(home)
    env = {**os.environ, "DRAFTSET_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", "sql", b"SELECT '\xff\xfe'"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
    )
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 1 and "not valid UTF-8" in err and "Traceback" not in err


def test_clean_text_and_redact():
    assert clean_text("a\x1b[31mb\x1b]0;t\x07c\td\n") == "abc\td\n"
    text = redact('401 {"error": "bad key sk-abcdefghijklmnop1234", "token": "hf_abcdefghijklmnopqrstu"}')
    assert "sk-abc" not in text and "hf_abc" not in text and "401" in text


def test_a_cards_markdown_reads_as_plain_words():
    from catalog.untrusted import card_text

    card = "---\nlicense: mit\n---\n# Big **chat** set\n\n- see [the paper](https://x.y/p) <b>now</b> | col |\n"
    assert card_text(card) == "Big chat set see the paper now col"
    assert card_text("word " * 100, limit=20).endswith("…") and len(card_text("word " * 100, limit=20)) <= 20
