"""Text for the toy target: string fields of the fixture Hub's data files, plus a built-in fallback.

The files are read directly (no Hub client): this is local training text, not a dataset being vetted.
Each row yields its strings in order, so neighbouring strings make (prompt, answer) pairs for the
brief chat-format training.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from catalog.errors import DraftsetError

FIXTURE_HUB = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "hub"
MAX_FIELD_CHARS = 2000

# Used when no fixture Hub is present (an installed wheel) so `model init-toy` always works.
FALLBACK_ROWS: list[list[str]] = [
    ["What is the capital of France?", "The capital of France is Paris."],
    [
        "Write a Python function that adds two numbers.",
        "def add(a, b):\n    return a + b\n\nThis function returns the sum of a and b.",
    ],
    ["Solve 12 * 7.", "12 * 7 = 84. The answer is 84."],
    [
        "Explain what a hash map is.",
        "A hash map stores key-value pairs and finds a value by hashing its key, in constant time on average.",
    ],
    ["How do I reverse a list in Python?", "Use slicing: items[::-1], or call items.reverse() to do it in place."],
    [
        "Summarise the water cycle.",
        "Water evaporates, condenses into clouds, falls as rain or snow, and flows back to the sea.",
    ],
    [
        "Fix the bug: for i in range(len(xs)): print(xs[i+1])",
        "The loop reads past the end of the list. Use for x in xs: print(x) instead.",
    ],
    ["Translate 'good morning' to Spanish.", "Buenos días."],
    ["List three prime numbers.", "2, 3 and 5 are prime numbers."],
    ["Write a SQL query counting rows in a table named users.", "SELECT COUNT(*) FROM users;"],
    ["What does HTTP status 404 mean?", "404 means Not Found: the server has no resource at that URL."],
    ["Give me a haiku about autumn.", "Red leaves drift and fall\nthe river carries them south\nquiet evening light"],
]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 2:
            yield text[:MAX_FIELD_CHARS]
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _rows(path: Path) -> Iterator[Any]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        yield from pq.read_table(path).to_pylist()
    elif suffix == ".jsonl":
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue  # the fixture Hub holds malformed lines on purpose; text only, so skip them
    elif suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        yield from (data if isinstance(data, list) else [data])
    elif suffix == ".csv":
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            yield from csv.DictReader(handle)


def corpus_rows(hub_dir: Path | None = None, max_chars: int = 3_000_000) -> list[list[str]]:
    """Rows of text fields from every data file under `hub_dir`, capped at `max_chars` in total."""
    root = FIXTURE_HUB if hub_dir is None else Path(hub_dir)
    rows: list[list[str]] = []
    total = 0
    # os.walk, not rglob: it tolerates folders vanishing mid-walk (the fixture Hub being regenerated).
    files = sorted(Path(d) / f for d, _, names in os.walk(root) for f in names if f != "README.md")
    for path in files:
        try:
            for raw in _rows(path):
                texts = list(_strings(raw))
                if texts:
                    rows.append(texts)
                    total += sum(map(len, texts))
                if total >= max_chars:
                    return rows
        except FileNotFoundError:
            continue  # removed since the walk listed it (the fixture Hub being regenerated)
        except (OSError, ValueError, csv.Error) as exc:  # pyarrow's errors are ValueError/OSError subclasses
            raise DraftsetError(
                f"cannot read corpus file {path}: {exc}",
                hint="fix or remove that file, or pass another folder with --corpus",
            ) from exc
    return rows + FALLBACK_ROWS


def chat_pairs(rows: list[list[str]]) -> list[tuple[str, str]]:
    """Neighbouring strings of a row as (prompt, answer) pairs."""
    return [(row[i], row[i + 1]) for row in rows for i in range(len(row) - 1)]
