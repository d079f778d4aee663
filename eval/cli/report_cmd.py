"""`draftset report MIX`: the dataset report, registered on the CLI by eval itself (see check_cmd)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pipeline.cli.common import TOKENIZER_OPTION, console, settings


def report_cmd(
    mix: str = typer.Argument(..., help="Name of the mix to report on."),
    tokenizer: Path | None = TOKENIZER_OPTION,
) -> None:
    """Write a dataset report for a mix under reports/<MIX>/.

    PNG plots: counts per source/category/mode, prompt and response token lengths, dedup and ingest yield.
    Plus report.md and report.html with the same tables."""
    from eval.report.page import write_report
    from pipeline.cli import known

    known.check_mix(mix)
    report = write_report(settings().home, mix, tokenizer)
    console.print(
        f"report: {report.html}\nmarkdown: {report.markdown}\nplots: {len(report.plots)} PNG in {report.folder}"
    )


def register_jobs(register: Any) -> None:
    """The service's `report` job (pipeline/servers/service/stages.py finds this through the entry-point group)."""
    from eval.service_jobs import register_report

    register_report(register)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
