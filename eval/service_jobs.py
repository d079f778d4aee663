"""eval's stages as jobs of the team service: `check` (a trained draft) and `report` (a mix's dataset report).

pipeline's service never imports eval; it finds these through `register_jobs` in eval's CLI modules (the
`draftset.commands` entry-point group, pipeline/servers/service/stages.py). Each job runs the function the
CLI command runs (check_draft, write_report) on names of the service's home, checked before it is queued.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.servers.service.jobs import Job
from pipeline.servers.service.stage_job import StageBody, StageJob, Work
from pipeline.servers.service.stage_kinds import check_mix, named, optional_model

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service


def no_settings(kind: str, body: StageBody) -> None:
    if body.settings:
        raise DraftsetError(f"{kind} takes no settings", hint="give its fields directly: GET /api/stages")


class CheckBody(StageBody):
    draft: str = Field(min_length=1, max_length=200, description="an exported draft under drafts/")
    captures: str = Field(min_length=1, max_length=200, description="its capture (a build for an online draft)")
    model: str | None = Field(None, description="the target under models/ (default: the manifest's)")
    max_samples: int = Field(64, ge=1, le=100_000)
    max_new_tokens: int = Field(64, ge=1, le=4096)


def prepare_check(service: Service, body: CheckBody) -> Work:
    from eval.checks.draft_check import check_draft
    from eval.checks.wiring_json import wiring_record
    from eval.specdecode import records

    home = service.settings.home
    no_settings("check", body)
    draft_dir = named(home, "drafts", body.draft, "draft")
    # a capture, else (a draft trained online) the build its taps are recomputed from
    online_build = Home(home).build(body.captures)
    if not (Home(home).capture(body.captures)).is_dir() and online_build.is_dir():
        captures = online_build
    else:
        captures = named(home, "captures", body.captures, "capture")
    target = optional_model(home, body.model)

    def work(job: Job) -> dict[str, Any]:
        job.emit({"stage": "check", "draft": body.draft, "status": "running"})
        r = check_draft(draft_dir, captures, target, body.max_samples, body.max_new_tokens)
        if r.wirings and r.target_dir is not None:  # as the CLI: the estimates are kept beside measured ones
            rows = records.estimate_rows(r.wirings, draft_dir, r.target_dir, r.steps, r.n_samples)
            records.save(service.catalog, rows)
        results = [w for w in [r.heldout, r.train] if w is not None] + r.wirings
        return {
            "draft": body.draft,
            "steps": r.steps,
            "wirings": [wiring_record(w) for w in results],
            "trust": r.trust(),
            "verdict": r.verdict(),
            "configured_is_best": r.configured_is_best,
        }

    return work


class ReportBody(StageBody):
    mix: str = Field(min_length=1, max_length=200)
    tokenizer: str | None = Field(None, description="a model under models/ whose tokenizer counts tokens")


def prepare_report(service: Service, body: ReportBody) -> Work:
    from eval.report.page import write_report

    home = service.settings.home
    no_settings("report", body)
    check_mix(home, body.mix)
    tokenizer = optional_model(home, body.tokenizer)

    def work(job: Job) -> dict[str, Any]:
        job.emit({"stage": "report", "mix": body.mix, "status": "running"})
        report = write_report(home, body.mix, tokenizer)
        return {
            "mix": body.mix,
            "page": f"/reports/{body.mix}",
            "html": str(report.html),
            "markdown": str(report.markdown),
            "plots": [p.name for p in report.plots],
        }

    return work


def register_check(register: Callable[[StageJob], None]) -> None:
    register(
        StageJob(
            "check", "check a trained draft: accuracy, accept length, wirings", CheckBody, prepare_check, target="draft"
        )
    )


def register_report(register: Callable[[StageJob], None]) -> None:
    register(
        StageJob("report", "write a mix's dataset report (tables, plots)", ReportBody, prepare_report, target="mix")
    )
