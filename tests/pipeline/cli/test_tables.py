"""CLI tables at 80 and 120 columns and piped: numbers are never split, repo ids only after their owner, prose folds, and columns
that cannot fit are left out from the right and named (snapshot-style: the lines as a terminal shows them)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from pipeline.cli import common

COLUMNS = ["dataset", "rows in", "records out", "size", "top reasons", "license", "revision"]
ROWS = [
    [
        "nebius-mini/swe-agent-trajectories-mini",
        19_332,
        19_330,
        "3.1 GB",
        "agentic trajectories with tool calls",
        "mit",
        "931e16bb",
    ],
    [
        "kimi-traj/deepswe-kimi-k2-trajectories-mini",
        1_250_000,
        2,
        "67.2 GB",
        "native Kimi answers",
        "apache-2.0",
        "f0615421",
    ],
]


def _render(monkeypatch, width: int, terminal: bool = True) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, color_system=None, legacy_windows=False)
    monkeypatch.setattr(common, "console", console)
    common.print_table(COLUMNS, ROWS, title="ingest")
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_numbers_and_ids_stay_whole_at_terminal_widths(monkeypatch, width):
    lines = _render(monkeypatch, width)
    assert all(len(line) <= width for line in lines), max(map(len, lines))
    text = "\n".join(lines)
    left_out = text.split("left out at this width: ")[1].split(";")[0].split(", ") if "left out" in text else []
    for row in ROWS:
        for column, value in zip(COLUMNS, row, strict=True):
            whole = common.cell_text(value)
            if column in left_out:
                assert whole not in text
            elif column == "dataset" and not any(whole in line for line in lines):
                # a repo id may break only after its owner, each part whole on its own line (and only where
                # that keeps another column in view)
                owner, name = whole.split("/")
                at = next(n for n, line in enumerate(lines) if f" {owner}/ " in line)
                assert f" {name} " in lines[at + 1], (whole, text)
            elif column != "top reasons":  # prose may fold; numbers and ids may not
                assert sum(whole in line for line in lines) >= 1, (whole, text)  # on one line, never split
    assert ("revision" in left_out) == (width == 80) and "dataset" not in left_out and "size" not in left_out


def test_piped_output_is_wide_plain_and_complete(monkeypatch):
    lines = _render(monkeypatch, 240, terminal=False)
    assert not any("\x1b[" in line for line in lines)
    assert "left out" not in "\n".join(lines) and any("agentic trajectories with tool calls" in x for x in lines)


def test_counts_get_thousands_separators_and_prose_folds(monkeypatch):
    assert common.cell_text(1234567) == "1,234,567" and common.cell_text(True) == "True"
    assert common.cell_text(None) == "" and common.cell_text(0.5) == "0.5"
    out = io.StringIO()
    monkeypatch.setattr(common, "console", Console(file=out, width=60, color_system=None))
    common.print_table(["repo", "why"], [["lab/alpha", "a long reason " * 8]])
    lines = out.getvalue().splitlines()
    assert len([x for x in lines if re.search(r"a long reason", x)]) > 1 and all(len(x) <= 60 for x in lines)
