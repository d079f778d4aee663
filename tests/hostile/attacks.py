"""The one table of attacks the hostile suite runs against every decoder and every route.

Each attack is what a stranger controls: a text value (a dataset cell, a form field, a path segment, a
query), or the bytes of a whole data file. test_decoders.py writes each text attack into a file of every
format (and gzipped) and reads it the way ingest and previews do; test_routes.py sends each text attack
into every parameter of every route of the service. A new attack added here runs everywhere.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

# -- text a stranger writes: cells, fields, path segments, queries -------------------------------------
TEXT_ATTACKS: dict[str, str] = {
    "deep_json": "[" * 5000 + "]" * 5000,  # parsed by some readers; recursive walkers fail near 1,000
    "huge_int": "9" * 5000,  # int() of > 4,300 digits raises ValueError, not a JSON error
    "ansi_escape": "\x1b[2J\x1b[31mred\x1b]0;title\x07",  # terminal control in what the CLI prints
    "html_script": "<script>alert(1)</script><img src=x onerror=alert(2)>\"'",
    "nul_bytes": "a\x00b\x00",
    "path_traversal": "../../../../etc/passwd",
    "sql_quote": "x' OR '1'='1'; DROP TABLE users; --",
    "jinja_template": "{{ 7*7 }}{% for x in range(10**9) %}{% endfor %}",
    "format_string": "%s%s%s%n{0}{self.__class__}",
    "rtl_override": "abc\u202edcba\u2066",
    "long_text": "x" * 300_000,  # past csv's 128 KB default field limit
    "newlines": "a\r\nb\rc\n\n\u2028d",
    "unicode_edge": "\ufeff\uffff\U0010ffff\u0301",
    "empty": "",
}
# Text that is not valid UTF-8 text at all (a lone surrogate cannot be encoded; bytes can still carry it).
LONE_SURROGATE = "a\udc80b"


# -- whole files -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileAttack:
    name: str
    suffix: str  # the file name's ending, which picks the reader
    data: bytes
    refused_as: frozenset[str]  # reasons the reader may give it (empty: rows may come back)


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9)


FILE_ATTACKS = [
    FileAttack("empty_lines_bomb", ".jsonl.gz", _gzip(b"\n" * 64_000_000), frozenset({"file_over_limit"})),
    FileAttack(
        "one_field_bomb",
        ".csv.gz",
        _gzip(b"text\n" + b"x" * 64_000_000 + b"\n"),
        frozenset({"file_over_limit", "too_large", "malformed"}),
    ),
    FileAttack("zero_bytes_parquet", ".parquet", b"", frozenset({"unreadable_file", "malformed"})),
    FileAttack("truncated_parquet", ".parquet", b"PAR1" + b"\x00" * 100, frozenset({"unreadable_file", "malformed"})),
    FileAttack("garbage_arrow", ".arrow", b"ARROW1\x00\x00" + bytes(range(256)) * 8, frozenset()),
    FileAttack("not_gzip", ".jsonl.gz", b"this is not gzip\n", frozenset()),
    FileAttack("invalid_utf8", ".jsonl", b'{"text": "\xff\xfe"}\n', frozenset()),
    FileAttack("escaped_lone_surrogate", ".jsonl", b'{"text": "a\\udc80b"}\n', frozenset()),
    FileAttack("deep_raw_json", ".jsonl", b'{"t": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n", frozenset()),
    FileAttack("huge_raw_int", ".jsonl", b'{"t": ' + b"9" * 5000 + b"}\n", frozenset()),
    FileAttack("json_array_unclosed", ".json", b'[{"text": "a"}, {"text": ', frozenset()),
    FileAttack("parquet_named_jsonl", ".jsonl", b"PAR1" + bytes(range(256)) + b"PAR1", frozenset()),
]
