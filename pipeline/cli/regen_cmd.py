"""`draftset regenerate MIX` (answer a mix's prompts with the target) and `draftset status`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from catalog.home import Home
from pipeline.cli.common import (
    CONFIG_OPTION,
    JSON_OPTION,
    catalog,
    console,
    json_listing,
    json_output,
    print_table,
    safe,
    settings,
    timestamp,
)
from pipeline.cli.stage_options import stage_options
from pipeline.regenerate.config import RegenConfig
from pipeline.regenerate.status import job_record, run_record  # status --json: the tables' raw numbers
from pipeline.stage.config import env_values


@stage_options(RegenConfig)  # every setting RegenConfig declares, as a flag (pipeline/cli/stage_options.py)
def regenerate_cmd(
    mix: str = typer.Argument(..., help="Mix name: reads data/mix/MIX/, writes data/regen/MIX/."),
    config_file: Path | None = CONFIG_OPTION,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Live progress bar."),
    as_json: bool = JSON_OPTION,
    flags: dict[str, Any] | None = None,
) -> None:
    """Answer every prompt of a mix with the target model through OpenAI-compatible servers.

    Each user turn is answered conditioned on the target's own earlier answers; native rows pass
    through unchanged. Kill it at any time and run it again: it resumes by id. Outputs in
    data/regen/MIX/: results-*.parquet, errors.jsonl, skipped.jsonl, manifest.json, progress.json
    (watch it from another terminal with `draftset status`). With --shard I/N they go to
    data/regen/MIX/shard-I-of-N/, and data/regen/MIX/manifest.json is complete once all N shards are.
    Settings: a flag given, else the --config file, else DRAFTSET_TARGET_* for endpoints and model, else the default."""
    from pipeline.cli import known
    from pipeline.regenerate.config import load_config
    from pipeline.regenerate.run import run_regenerate

    document = json_listing(as_json)

    cfg = settings()
    given = flags or {}
    env = env_values(RegenConfig, cfg)  # DRAFTSET_TARGET_ENDPOINTS / _MODEL: under the file and the flags
    config = load_config(config_file, mix=mix, env=env, **given)
    known.check_mix(mix)  # after the config's own checks (a bad partition) have spoken
    result = run_regenerate(config, cfg.home, catalog(), show_progress=progress, console=console)
    counts = result.counts
    rows = [[k, v] for k, v in sorted(counts.items()) if v]
    label = f"{mix} shard {config.shard.label}" if config.shard else mix
    print_table(["count (this run)", "rows"], rows, title=f"regenerate {label}")
    document.update(
        {
            "run_id": result.run_id,
            "counts": counts,
            "on_disk": result.totals,
            "input_rows": result.input_rows,
            "endpoints": result.endpoints,  # requests, failures and failures_by_reason of each endpoint
        }
    )
    console.print(f"run {result.run_id}", highlight=False)
    for endpoint in result.endpoints or []:
        if endpoint["failures"]:  # failed attempts (most were retried): say what they were
            why = ", ".join(f"{kind} {n:,}" for kind, n in endpoint["failures_by_reason"].items())
            console.print(
                f"{safe(endpoint['url'])}: {endpoint['failures']:,} of {endpoint['requests']:,} attempts failed ({why})",
                highlight=False,
            )
    t = result.totals
    console.print(
        f"on disk: {t['results']} results + {t['errors']} errors + {t['skipped']} skipped = "
        f"{sum(t.values())} of {result.input_rows} input rows -> {result.out_dir}",
        highlight=False,
    )
    if result.mix_manifest and config.shard:  # only a sharded run writes the mix manifest
        done = [k for k, m in result.mix_manifest["per_shard"].items() if m and m["complete"]]
        console.print(
            f"mix {mix}: {len(done)} of {config.shard.count} shards complete "
            f"({'all done' if result.mix_manifest['complete'] else 'run the others to finish'})",
            highlight=False,
        )
    if t["errors"]:
        again = f" --shard {config.shard.label}" if config.shard else ""
        console.print(
            f"[yellow]next:[/] read {result.out_dir / 'errors.jsonl'}; "
            f"`draftset regenerate {mix}{again} --retry-errors` answers them again",
            highlight=False,
        )


def status_cmd(
    limit: int = typer.Option(10, "--limit", min=1, help="How many recent stage runs to list."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show running/finished regeneration jobs and recent stage runs (read-only; safe while jobs run)."""
    with json_output(as_json) as document:
        _status(limit, document)


def _status(limit: int, document: dict[str, Any]) -> None:
    """Prints the status; `document` (the --json one) gets `catalog_holder`: the service, a process, or None."""
    from pipeline.regenerate.status import recent_stage_runs, regen_jobs
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # DRAFTSET_SERVER: the service's home, as the service sees it
        found = client.status(limit)
        holder = document["catalog_holder"] = found["holder"]
        console.print(
            f"catalog: held by draftset serve at {safe(holder['url'] or client.url)} "
            f"(pid {holder['pid']} on {safe(holder['host'])}); this status is the service's",
            highlight=False,
        )
        served = [{**r, **{k: timestamp(r[k]) for k in ("started_at", "finished_at")}} for r in found["stage_runs"]]
        _print_status(found["regen_jobs"], found["regen_root"], served, None)
        return
    from catalog.liveness import mark_interrupted

    home = settings().home
    jobs = regen_jobs(home)
    runs = recent_stage_runs(home, limit)  # None when busy past the timeout: then no second wait below
    if runs is not None and mark_interrupted(catalog()):  # runs whose process died read `interrupted`
        runs = recent_stage_runs(home, limit)
    document["catalog_holder"] = None
    line = None
    if runs is None:
        document["catalog_holder"], line = _holder(limit)
    _print_status(jobs, str(Home(home).regen_root), runs, line)


def _holder(limit: int) -> tuple[dict[str, Any], str]:
    """Who holds the catalog that a read could not open, and the line saying so: the team service (its URL
    and how to go through it), or a process by pid and command line."""
    from catalog.owner import lock_holder, running_service

    home = settings().home
    service = running_service(home)
    if service:
        return {"kind": "service", **service}, (
            f"draftset serve (pid {service['pid']}) at {service['url']} holds it; go through it: "
            f"export DRAFTSET_SERVER={service['url']} DRAFTSET_TOKEN=<your token>, then `draftset status --limit {limit}`"
        )
    holder = lock_holder(Home(home).catalog_file) or {"pid": None, "command": None}
    who = f"pid {holder['pid']}" if holder["pid"] is not None else "another process"
    if holder["command"]:
        who += f" ({holder['command']})"
    return {"kind": "process", **holder}, f"{who} is writing it; run `draftset status` again when it is done"


def _print_status(jobs: list[dict], regen_root: str, runs: list[dict] | None, holder: str | None) -> None:
    from pipeline.regenerate.progress import hms
    from pipeline.regenerate.status import format_counts, run_subject

    for damaged in (j for j in jobs if "problem" in j):
        console.print(
            f"[yellow]{safe(damaged['problem'])}[/]; rerun `draftset regenerate` on that mix to rewrite it",
            highlight=False,
        )
    jobs = [j for j in jobs if "problem" not in j]
    if jobs:
        print_table(
            ["mix", "shard", "state", "done/total", "ok/err/skip", "req/s", "tok/s", "mean tok", "ETA", "updated"],
            [
                [
                    j.get("mix"),
                    j.get("shard") or "-",
                    j.get("state"),
                    f"{sum(j.get(k, 0) for k in ('results', 'errors', 'skipped', 'resumed'))}/{j.get('total')}",
                    f"{j.get('results')}/{j.get('errors')}/{j.get('skipped')}",
                    j.get("req_s"),
                    j.get("tok_s"),
                    j.get("mean_completion_tokens"),
                    hms(j.get("eta_s")),
                    str(j.get("updated_at", ""))[11:19],
                ]
                for j in jobs
            ],
            records=[job_record(j) for j in jobs],
            title="regeneration jobs",
        )
    else:
        console.print(f"no regeneration jobs under {safe(regen_root)}", highlight=False)
    if runs is None:
        console.print(f"[yellow]catalog busy[/]: {safe(holder)}", highlight=False)
    elif runs:
        print_table(
            # run_id last: at 80 columns it is the one left out (named under the table; --json has it)
            ["stage", "of", "status", "counts", "started", "took", "run_id"],
            [
                [
                    r["stage"],
                    run_subject(r.get("params")),
                    r["status"],
                    format_counts(r["counts"]),
                    _started(r["started_at"]),
                    _took(r["started_at"], r["finished_at"]),
                    r["run_id"],
                ]
                for r in runs
            ],
            records=[run_record(r) for r in runs],
            title="recent stage runs",
        )
    else:
        console.print("no stage runs in the catalog yet", highlight=False)


def _started(value: Any) -> str:
    """When a run started, short enough for 80 columns: the time today, else month-day and time (the full
    timestamp, microseconds and all, made the table wrap); --json keeps it whole."""
    from datetime import datetime

    if not isinstance(value, datetime):
        return str(value or "")
    return value.strftime("%H:%M:%S" if value.date() == datetime.now().date() else "%m-%d %H:%M")


def _took(started: Any, finished: Any) -> str:
    """How long a run took, as h:mm:ss ("-" while it has no end: running, or interrupted)."""
    from pipeline.regenerate.progress import hms

    if not finished or not started:
        return "-"
    return hms((finished - started).total_seconds()) if hasattr(finished, "year") else ""


def register(app: typer.Typer) -> None:
    app.command("regenerate")(regenerate_cmd)
    app.command("status")(status_cmd)
