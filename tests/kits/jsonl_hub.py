"""A Hub folder written per test: one JSONL file per dataset under the layout the local Hub serves
(`ROOT/owner/name/data/train.jsonl`), with a minimal dataset card."""

from __future__ import annotations

from pathlib import Path

CARD = "---\nlicense: mit\nlanguage: [en]\npretty_name: {name}\n---\n# {name}\n"


def write_jsonl_repo(root: Path, repo_id: str, lines: list[str]) -> None:
    folder = root / repo_id
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(CARD.format(name=repo_id))
    (folder / "data" / "train.jsonl").write_text("\n".join(lines) + "\n")
