"""Every limit on untrusted input, in one place, with the safe decoders that enforce them.

Datasets, cards and HTTP answers come from strangers. Each limit here, when hit, is a named
`LimitExceeded` whose `reason` is a snake_case quarantine reason (a row is quarantined, a card or a
request gets one clear error), never a MemoryError, a RecursionError or a segfault in a C library.

Why each limit exists:
- JSON depth: CPython's json raises RecursionError near depth 1,000, recursive walkers (detection,
  pydantic) fail earlier, and pyarrow's JSON reader segfaults on ~50,000-deep rows.
- integer digits: int() of a >4,300-digit string raises ValueError (not JSONDecodeError) and big ints
  cost quadratic time; no conversation needs more than a few dozen digits.
- row bytes: one runaway row must not be loaded (a broken export; ingest's length filter drops it).
- card YAML: a 414-byte alias bomb expands to gigabytes; aliases are allowed only while the expanded
  document stays small, and deep nesting is refused before PyYAML's recursive constructor sees it.
- request time / response bytes: what one request to the local Hub may cost.
- decoded bytes per file: a 1.3 KB parquet file of dictionary pages decodes to ~10 GB; a file may give at
  most MAX_DECODED_RATIO times its size (adapters/read/capped.py), decoded in a worker capped at MAX_WORKER_MEMORY.
  The same budget bounds the bytes a decompressor hands out (a gzip of empty lines gives no rows at all).
- read time per file: a compressed file of millions of empty lines kept one reader busy for 15+ minutes;
  each capped read of one file ends after MAX_FILE_READ_S of wall clock, however busy it is.
- SQL console memory: DuckDB's interrupt() and memory_limit do not reach inside one function call
  (repeat('x', 2e9) ran 10 s past a 1 s interrupt and took 3.8 GB under a 256 MB memory_limit), so a user's
  statement runs in a child that may add at most MAX_SQL_WORKER_MEMORY of address space, killed at its time limit;
  DuckDB's own memory_limit (SQL_DUCKDB_MEMORY) stops the operators it does track earlier, with its own error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from catalog.errors import DraftsetError

MAX_JSON_DEPTH = 64  # nesting of objects/arrays in one row (real conversations: < 12)
MAX_INT_DIGITS = 64  # digits of one JSON integer literal
MAX_ROW_BYTES = 32 * 1024 * 1024  # one raw row (a JSONL line, a CSV record, a parquet row as JSON)
MAX_CARD_BYTES = 1024 * 1024  # a dataset card (README.md) read for metadata
MAX_YAML_NODES = 100_000  # nodes of a card's YAML front matter after alias expansion
MAX_YAML_DEPTH = 64  # nesting of that YAML
MAX_REQUEST_S = 30.0  # one local-Hub request that reads a data file (parquet/JSON work)
MAX_RESPONSE_ROWS_BYTES = 16 * 1024 * 1024  # rows the local Hub's viewer returns in one answer
MAX_WORKER_MEMORY = 2 * 1024**3  # address space of the process that parses one untrusted file
# Decoded rows one data file may give, as a multiple of its size on disk (with a floor for small files):
# text compresses 3-10x, dictionary-heavy columns ~20x; a decompression bomb is 1,000x and more.
MAX_DECODED_RATIO = 100
MIN_DECODED_BUDGET = 256 * 1024**2
# Address space one console statement may add to its child (beyond what the child mapped when forked);
# DuckDB reserves ~0.6 GB of it when it opens a file, the rest is the statement's.
MAX_SQL_WORKER_MEMORY = 2 * 1024**3
SQL_DUCKDB_MEMORY = "512MB"  # DuckDB's memory_limit in that child (its buffer manager; half the cap)
MAX_FILE_READ_S = 300.0  # wall clock for reading one data file in the capped child (real shards: < 60 s/GB)


def decoded_budget(size_on_disk: int) -> int:
    """Bytes one data file may decode to (decompressed bytes, decoded rows): a multiple of its size, with a floor."""
    return max(MIN_DECODED_BUDGET, MAX_DECODED_RATIO * size_on_disk)


class LimitExceeded(DraftsetError):
    """An input broke a limit. `reason` is the quarantine reason (snake_case)."""

    def __init__(self, reason: str, message: str, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.reason = reason


# A JSON string literal (with escapes): removed before counting brackets, so "[[[" inside text is not depth.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_depth(text: str) -> int:
    """Deepest bracket nesting of a JSON text, without parsing it (linear, no recursion)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:  # the common case: cannot be too deep
        return text.count("[") + text.count("{")
    depth = peak = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            peak = max(peak, depth)
        else:
            depth -= 1
    return peak


def _parse_int(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise LimitExceeded("huge_int", f"an integer of {digits:,} digits (limit {MAX_INT_DIGITS})")
    return int(literal)


def loads_limited(text: str | bytes, where: str = "JSON") -> Any:
    """json.loads under every limit; any failure is a LimitExceeded with a quarantine reason.

    Reasons: too_large, too_deep, huge_int, invalid_json, lone_surrogate.
    """
    if len(text) > MAX_ROW_BYTES:
        raise LimitExceeded("too_large", f"{where}: {len(text):,} bytes, over the {MAX_ROW_BYTES:,}-byte row limit")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LimitExceeded("invalid_utf8", f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise LimitExceeded("too_deep", f"{where}: JSON nested {depth:,} deep (limit {MAX_JSON_DEPTH})")
    try:
        value = json.loads(text, parse_int=_parse_int)
    except LimitExceeded as exc:
        raise LimitExceeded(exc.reason, f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise LimitExceeded("invalid_json", f"{where}: invalid JSON ({exc.msg} at char {exc.pos})") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # belt and braces: never a traceback
        raise LimitExceeded("invalid_json", f"{where}: unreadable JSON ({type(exc).__name__})") from None
    if _SURROGATE_ESCAPE.search(text):  # escaped pairs are fine; a lone half cannot be encoded anywhere
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise LimitExceeded(
                "lone_surrogate", f"{where}: a string holds an unpaired UTF-16 surrogate (\\ud800-\\udfff escape)"
            ) from None
    return value


def check_value(value: Any, where: str = "row") -> None:
    """Limits on an already-decoded value (parquet rows, viewer answers): depth, ints, surrogates.

    Iterative, so it cannot itself hit the recursion limit."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise LimitExceeded("too_deep", f"{where}: nested deeper than {MAX_JSON_DEPTH}")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
            stack.extend((k, depth + 1) for k in item if isinstance(k, str))
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise LimitExceeded("lone_surrogate", f"{where}: a string holds an unpaired surrogate") from None
        elif isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > MAX_INT_DIGITS * 3.33:
            raise LimitExceeded("huge_int", f"{where}: an integer over {MAX_INT_DIGITS} digits")
