"""Pages for the stages after ingest: start one (operators), resume a cut-off job, read a mix's report (viewers).

The stages page draws each stage's form from its request model (stages.py), so a stage added there gets its
form without a template of its own; the form posts JSON to POST /api/stages/KIND (static/stages.js) and a
refusal is shown beside that form. The report page renders report.json (eval/report/page.py writes it next
to report.md and report.html) through these autoescaped templates: Hub text in a report is text, never
markup, and only the plots the report lists are served.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.servers.service.auth import ApiError
from pipeline.servers.service.pages import render

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service

router = APIRouter(include_in_schema=False)
REPORT_JSON = "report.json"  # the name eval/report/page.py writes (pipeline never imports eval)


def _service(request: Request) -> Service:
    return request.app.state.service


def _field(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """One input of a stage's form from its JSON-schema property: its widget and what the script sends."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    kind = options[0] if options else {}
    widget = {"boolean": "checkbox", "integer": "number", "number": "number", "array": "json", "object": "json"}
    choices = kind.get("enum")
    return {
        "name": name,
        "widget": "select" if choices else widget.get(kind.get("type", "string"), "text"),
        "choices": choices or [],
        "value": "" if schema.get("default") is None else schema["default"],
        "required": "default" not in schema,
        "about": schema.get("description", ""),
        "json_type": kind.get("type", "string"),
        "optional": any(s.get("type") == "null" for s in schema.get("anyOf", [])),
    }


def stage_forms() -> list[dict[str, Any]]:
    from pipeline.servers.service import stages

    forms = []
    for view in stages.catalog_view():
        schema = view["body"]
        props = {k: v for k, v in schema.get("properties", {}).items() if k != "settings"}
        fields = [_field(k, v) for k, v in props.items()]
        for f in fields:
            f["required"] = f["name"] in schema.get("required", [])
        forms.append({**view, "fields": fields})
    return forms


@router.get("/stages")
async def stages_page(request: Request) -> HTMLResponse:
    s = _service(request)
    user = await s.auth.require(request, "viewer")
    forms = await run_in_threadpool(stage_forms)
    return render(request, "stages.html", user, forms=forms, jobs=s.jobs.recent())


@router.post("/jobs/{job_id}/resume")
async def resume_page(request: Request, job_id: str) -> RedirectResponse:
    from pipeline.servers.service import stages

    s = _service(request)
    user = await s.auth.require(request, "operator")  # checks the form's CSRF token too
    job = await run_in_threadpool(stages.resume, s, job_id, user.name)
    return RedirectResponse(f"/jobs/{job.job_id}", status_code=303)


# -- reports --------------------------------------------------------------------------------------------
def _reports_root(service: Service) -> Any:
    return Home(service.settings.home).root / "reports"


def report_names(service: Service) -> list[str]:
    root = _reports_root(service)
    return sorted(d.name for d in root.iterdir() if (d / REPORT_JSON).is_file()) if root.is_dir() else []


def read_report(service: Service, mix: str) -> dict[str, Any]:
    try:
        folder = Home(service.settings.home).report(mix)  # a name that would leave reports/ is refused here
    except DraftsetError as exc:
        raise ApiError(400, str(exc), exc.hint) from None
    path = folder / REPORT_JSON
    if not path.is_file():
        known = report_names(service)
        raise ApiError(
            404,
            f"no report for mix {mix!r}" + (f" (reports: {', '.join(known[:12])})" if known else " (none yet)"),
            'write one: the report job on the stages page, or POST /api/stages/report {"mix": NAME}',
        )
    return json.loads(path.read_text(encoding="utf-8"))


@router.get("/reports")
async def reports_page(request: Request) -> HTMLResponse:
    s = _service(request)
    user = await s.auth.require(request, "viewer")
    return render(request, "reports.html", user, names=await run_in_threadpool(report_names, s))


@router.get("/reports/{mix}")
async def report_page(request: Request, mix: str) -> HTMLResponse:
    s = _service(request)
    user = await s.auth.require(request, "viewer")
    report = await run_in_threadpool(read_report, s, mix)
    return render(request, "report.html", user, mix=mix, report=report)


@router.get("/reports/{mix}/plots/{file}")
async def report_plot(request: Request, mix: str, file: str) -> FileResponse:
    s = _service(request)
    await s.auth.require(request, "viewer")
    report = await run_in_threadpool(read_report, s, mix)
    listed = {p.get("file") for p in report.get("plots", [])}
    if file not in listed or not file.endswith(".png"):  # only what the report names: never a path of choice
        raise ApiError(404, f"no plot {file!r} in the report of {mix!r}", f"GET /reports/{mix} lists its plots")
    return FileResponse(Home(s.settings.home).report(mix) / file, media_type="image/png")
