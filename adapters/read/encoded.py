"""Values held encoded inside one field: a JSON string (tool declarations, message lists, call arguments, a JSON
string inside a JSON string) or a compressed blob (base64 of gzip / zlib / bz2 / xz). Field accounting
(adapters/infer/accounting.py) judges such a field by what it decodes to, and probes it by marking the decoded text and
encoding it again, so a field counts as read when the adapter reads what it decodes to: `"[]"` holds nothing, a
tools column of JSON is carried when its declarations reach the record, a blob of turns nobody decodes is
substantial unread text rather than an identifier-like token.

Decoding is bounded: JSON under catalog.limits, decompression capped at MAX_DECODED bytes per value.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import json
import lzma
import re
import zlib
from collections.abc import Callable
from typing import Any

from catalog import limits

MAX_DECODED = 1024 * 1024  # bytes one blob may decompress to: enough to judge it, never a bomb
MAX_NESTING = 3  # a JSON string inside a JSON string inside ...: decoded this many levels deep
_B64 = re.compile(r"^[A-Za-z0-9+/\s]{40,}={0,2}\s*$")


def _json(text: str) -> Any:
    s = text.strip()
    if not s or s[0] not in "[{" or s[-1] not in "]}":
        return None
    try:
        value = limits.loads_limited(s, "value")
    except (limits.LimitExceeded, ValueError):
        return None
    return value if isinstance(value, (list, dict)) else None


def _decompress(data: bytes) -> tuple[str, bytes] | None:
    """(codec, at most MAX_DECODED bytes) of a compressed stream recognised by its magic bytes."""
    try:
        if data[:2] == b"\x1f\x8b":
            return "gzip", zlib.decompressobj(31).decompress(data, MAX_DECODED)
        if data[:1] == b"\x78" and data[1:2] in (b"\x01", b"\x5e", b"\x9c", b"\xda"):
            return "zlib", zlib.decompressobj().decompress(data, MAX_DECODED)
        if data[:3] == b"BZh":
            return "bz2", bz2.BZ2Decompressor().decompress(data, MAX_DECODED)
        if data[:6] == b"\xfd7zXZ\x00":
            return "xz", lzma.LZMADecompressor().decompress(data, MAX_DECODED)
    except (zlib.error, OSError, lzma.LZMAError, EOFError, ValueError):
        return None
    return None


def decode(value: str) -> tuple[str, Any] | None:
    """(how it was held, what it decodes to) for a JSON container string or a compressed blob; else None.
    A blob's content is its text, or the JSON that text holds."""
    found = _json(value)
    if found is not None:
        return "JSON string", found
    if len(value) < 40 or not _B64.match(value):
        return None
    try:
        raw = base64.b64decode(re.sub(r"\s", "", value), validate=True)
    except (binascii.Error, ValueError):
        return None
    unpacked = _decompress(raw)
    if unpacked is None:
        return None
    codec, data = unpacked
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    inner = _json(text)
    return f"{codec} blob (base64)", inner if inner is not None else text


def texts(value: Any, depth: int = 0) -> list[str]:
    """The non-empty strings a decoded value holds, JSON strings inside it decoded in turn."""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, str) and v.strip():
            inner = _json(v) if depth < MAX_NESTING else None
            out.extend(texts(inner, depth + 1) if inner is not None else [v])
    return out


def empty(decoded: Any) -> bool:
    """A decoded container with no leaf at all (`[]`, `{}`, `[{}]`, `{"a": null}`): the field holds nothing."""
    stack = [decoded]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif v is not None and v != "":
            return False
    return True


def remarked(value: str, mark: Callable[[str], str]) -> str | None:
    """A JSON string with every text inside it replaced by mark(text), encoded again (JSON strings inside it
    too); None for what cannot be re-encoded faithfully (a blob: the adapter never decodes one, so a plain
    marker in its place shows the same thing)."""
    return _remarked(value, mark, 0)


def _remarked(value: str, mark: Callable[[str], str], depth: int) -> str | None:
    found = _json(value)
    return None if found is None else json.dumps(_mark(found, mark, depth), ensure_ascii=False)


def _mark(v: Any, mark: Callable[[str], str], depth: int) -> Any:
    if isinstance(v, dict):
        return {k: _mark(x, mark, depth) for k, x in v.items()}
    if isinstance(v, list):
        return [_mark(x, mark, depth) for x in v]
    if isinstance(v, str) and v.strip():
        inner = _remarked(v, mark, depth + 1) if depth < MAX_NESTING else None
        return inner if inner is not None else mark(v)
    return v
