"""Write a repo folder the local Hub serves: a card (YAML front matter + body) and data files.

Used by tests and the benchmark to build small hubs in temp folders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml


def write_card(repo_dir: Path, card_data: dict[str, Any], body: str = "") -> None:
    repo_dir.mkdir(parents=True, exist_ok=True)
    front = yaml.safe_dump(card_data, sort_keys=False, allow_unicode=True)
    (repo_dir / "README.md").write_text(f"---\n{front}---\n\n{body}\n", encoding="utf-8")


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """parquet / jsonl / json (array) / csv by extension."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".json":
        path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    elif path.suffix == ".csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(pa.Table.from_pylist(rows), path)
    else:
        raise ValueError(f"write_rows: unsupported extension {path.suffix}")


def write_repo(
    root: Path, repo_id: str, card_data: dict[str, Any], files: dict[str, list[dict[str, Any]] | bytes], body: str = ""
) -> Path:
    """`files` maps a relative path to rows (written by extension) or raw bytes (written as-is)."""
    repo_dir = Path(root) / repo_id
    write_card(repo_dir, card_data, body)
    for rel, content in files.items():
        target = repo_dir / rel
        if isinstance(content, bytes):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        else:
            write_rows(target, content)
    return repo_dir
