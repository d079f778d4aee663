"""The report's scale figures: rows read vs available per source, what was left unread, duplicates by scope."""

from __future__ import annotations

import random

from catalog import Catalog
from catalog.home import Home
from catalog.io import write_json_atomic
from eval.report.page import write_report
from pipeline.mix.run import run_mix


def _words(seed: str, n: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(10**6)}" for _ in range(n))


def test_scale_table_counts_reads_and_duplicates_within_and_across_sources(home, sources):
    make, write = sources
    chat = [make("lab/chat", i, _words(f"c{i}", 30)) for i in range(10)]
    chat.append(make("lab/chat", 50, _words("c1", 30).upper()))  # exact duplicate within lab/chat
    code = [make("lab/code", i, _words(f"k{i}", 30)) for i in range(6)]
    code.append(make("lab/code", 60, _words("c2", 30) + "!"))  # duplicate of a lab/chat row: across
    write(home, chat)
    write(home, code)
    sampled = {"kind": "row_hash", "seed": 0, "rate": 0.011, "target": 11, "available": 1_000, "taken": 11}
    folder = Home(home).normalized("lab/chat")
    write_json_atomic(folder / "stats.json", {"counts": {"in": 1_000, "out": 11, "skipped_not_sampled": 989}})
    write_json_atomic(folder / "manifest.json", {"sample": sampled})
    folder = Home(home).normalized("lab/code")
    write_json_atomic(folder / "stats.json", {"counts": {"in": 7, "out": 7}})
    write_json_atomic(folder / "manifest.json", {"sample": {"kind": "all", "taken": 7}})
    run_mix(Catalog(home), home, "scale")
    md = write_report(home, "scale").markdown.read_text()
    assert "## Scale: what was read, and duplicates by scope" in md
    assert "| lab/chat | 1,000 | 1,000 | 11 | 989 | 0 | row hash, rate 0.011 | 1 | 0 |" in md
    assert "| lab/code | ? | 7 | 7 | 0 | ? | all | 0 | 1 |" in md
