"""Every attack of attacks.py through every decoder, read as ingest and previews read (adapters.read.capped:
the capped child for the formats whose decoded size the file does not bound).

What must hold for each: the read ends (quickly: limits are lowered to test scale), each result is a row or
a one-line problem with a snake_case reason, the good row beside the attack still comes back, and an
attack row that comes back comes back unchanged (nothing rewritten silently)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from attacks import FILE_ATTACKS, LONE_SURROGATE, TEXT_ATTACKS

from adapters.read import capped
from catalog import limits

REASON = re.compile(r"^[a-z][a-z0-9_]*$")
GOOD = "a good row"


@pytest.fixture(autouse=True)
def test_scale_limits(monkeypatch):
    """The production limits at test scale: a bomb is refused after MBs and seconds, not GBs and minutes."""
    monkeypatch.setattr(limits, "MIN_DECODED_BUDGET", 8 * 1024**2)
    monkeypatch.setattr(limits, "MAX_FILE_READ_S", 8.0)


def _write(path: Path, fmt: str, texts: list[str]) -> None:
    rows = [{"text": t} for t in texts]
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif fmt == "arrow":
        table = pa.Table.from_pylist(rows)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        path.write_bytes(_text_file(fmt, rows).encode("utf-8", "surrogatepass"))


def _text_file(fmt: str, rows: list[dict[str, str]]) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows)
    if fmt == "json":
        return json.dumps(rows)
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",")
    writer.writerow(["text"])
    writer.writerows([[r["text"]] for r in rows])
    return buf.getvalue()


def _read(path: Path) -> tuple[list[tuple], float]:
    t0 = time.monotonic()
    results = list(capped.iter_file(path, path.name))
    return results, time.monotonic() - t0


def _check_shapes(results: list[tuple]) -> list[str]:
    """Every result a row or a named one-line problem; the problems' reasons."""
    reasons = []
    for row, problem in results:
        assert (row is None) != (problem is None), (row, problem)
        if problem is not None:
            assert REASON.match(problem.reason), problem.reason
            assert "\n" not in str(problem) and "Traceback" not in str(problem), str(problem)[:300]
            reasons.append(problem.reason)
        else:
            assert isinstance(row, dict)
    return reasons


CASES = [
    (attack, fmt, gz)
    for attack in [*TEXT_ATTACKS, "lone_surrogate"]
    for fmt in ("parquet", "arrow", "jsonl", "json", "csv", "tsv")
    for gz in ((False, True) if fmt in ("jsonl", "csv") else (False,))
]


@pytest.mark.parametrize(("attack", "fmt", "gz"), CASES, ids=[f"{a}-{f}{'-gz' if g else ''}" for a, f, g in CASES])
def test_a_text_attack_in_any_format_is_a_row_or_a_named_problem(tmp_path, attack, fmt, gz):
    payload = LONE_SURROGATE if attack == "lone_surrogate" else TEXT_ATTACKS[attack]
    path = tmp_path / f"data.{fmt}"
    try:
        _write(path, fmt, [GOOD, payload, GOOD])
    except (UnicodeEncodeError, pa.ArrowException):
        pytest.skip(f"{fmt} cannot hold this text at all")
    if gz:
        gz_path = path.with_name(path.name + ".gz")
        gz_path.write_bytes(gzip.compress(path.read_bytes()))
        path = gz_path
    results, took = _read(path)
    assert took < 10.0
    _check_shapes(results)
    texts = [row.get("text") for row, _ in results if row is not None]
    assert texts.count(GOOD) == 2, results[:3]  # the rows beside the attack are read
    for text in texts:
        if text != GOOD and text is not None:  # csv/tsv: a NUL or a bare CR is the csv module's to refuse
            assert (
                text == payload or fmt in ("csv", "tsv") and text.replace("\r\n", "\n") == payload.replace("\r\n", "\n")
            ), (text[:80], payload[:80])


@pytest.mark.parametrize("attack", FILE_ATTACKS, ids=[a.name for a in FILE_ATTACKS])
def test_a_hostile_file_ends_in_seconds_with_rows_or_named_problems(tmp_path, attack):
    path = tmp_path / f"data{attack.suffix}"
    path.write_bytes(attack.data)
    results, took = _read(path)
    assert took < 12.0, took
    reasons = _check_shapes(results)
    assert results, "a file gives rows or says why it gives none"
    if attack.refused_as:
        assert set(reasons) & attack.refused_as, reasons
