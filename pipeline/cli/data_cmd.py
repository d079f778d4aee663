"""`draftset ingest | dedup | mix | report`: approved data → normalized shards → deduplicated mix → report."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.cli import known
from pipeline.cli.common import (
    CONFIG_OPTION,
    JSON_OPTION,
    catalog,
    console,
    field_option,
    json_listing,
    json_output,
    literal,
    print_table,
    safe,
    settings,
)
from pipeline.cli.common import TOKENIZER_OPTION as _TOKENIZER
from pipeline.dedup.config import DedupConfig
from pipeline.ingest.config import SETTABLE as INGEST_SETTABLE
from pipeline.ingest.config import IngestConfig
from pipeline.mix.config import SETTABLE as MIX_SETTABLE
from pipeline.mix.config import MixConfig
from pipeline.mix.figures import mix_figures
from pipeline.stage import StageConfig, skipped_total, stage_settings


def _threshold(model: type[StageConfig]) -> Any:
    return field_option(model, "threshold", help="Near-duplicate Jaccard threshold (MinHash LSH).")


def _max_tokens(model: type[StageConfig]) -> Any:
    return field_option(model, "max_prompt_tokens", min=1, help="Drop prompts longer than this (too_long).")


def _min_tokens(model: type[StageConfig]) -> Any:
    return field_option(model, "min_prompt_tokens", min=0, help="Drop prompts shorter than this (too_short).")


_WORKERS = typer.Option(1, "--workers", min=1, help="Worker processes for dedup's per-shard pass.")
_EXECUTOR = typer.Option(
    "local", "--executor", help="Where they run: local (a process pool) or ray (the cluster RAY_ADDRESS names)."
)


def _executor(name: str) -> Any:
    if name not in ("local", "ray"):
        raise typer.BadParameter(f"{name!r}: use local or ray", param_hint="--executor")
    return name


def _progress() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,  # piped output gets the tables, not a bar's leftovers
    )


def _counts_row(name: str, counts: dict[str, int], status: str) -> list[object]:
    dropped = {k.removeprefix("dropped_"): v for k, v in counts.items() if k.startswith("dropped_") and v}
    return [
        name,
        counts.get("in", 0),
        counts.get("out", 0),
        skipped_total(counts),
        dict(sorted(dropped.items())),  # shown as `reason=N, ...` (or -); --json keeps the numbers by reason
        counts.get("errors", 0),
        status,
    ]


def ingest_cmd(
    plan: str | None = typer.Option(None, "--plan", help="Ingest every dataset of this plan."),
    repo: list[str] | None = typer.Option(None, "--repo", help="Ingest only this dataset (repeatable)."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the dataset's shards first instead of resuming."),
    max_conversation_chars: int | None = field_option(
        IngestConfig, "max_conversation_chars", min=1, help="Quarantine conversations longer than this (too_large)."
    ),
    all_rows: bool = typer.Option(False, "--all", help="With --plan: read every row, not the plan's quota."),
    oversample: float | None = field_option(
        IngestConfig, "oversample", min=1.0, help="With --plan: rows read per source = its quota x this."
    ),
    workers: int = typer.Option(1, "--workers", min=1, help="Datasets ingested at once (worker processes)."),
    executor: str = _EXECUTOR,
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Stream approved datasets through their adapters into canonical parquet shards.

    Shards go to data/normalized/<owner>__<name>/ and a re-run resumes by id.
    Rejected rows go to quarantine.jsonl there, with row index, field and reason.
    With --plan each source is read up to its quota x --oversample, a seeded row-hash sample (a larger
    plan later tops it up); --all reads everything."""
    from pipeline.ingest.fanout import ingest
    from pipeline.ingest.run import repos_to_ingest

    json_listing(as_json)

    values = stage_settings(
        IngestConfig,
        config_file,
        {"max_conversation_chars": max_conversation_chars, "oversample": oversample},
        settable=INGEST_SETTABLE,
    )
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # DRAFTSET_SERVER: a job of the service, on its catalog and its Hub token
        body = {"plan": plan, "repos": list(repo or []), "fresh": fresh, "all_rows": all_rows, "settings": values}
        _ingest_remote(client, body, workers, executor)
        return
    cfg = settings()
    token = cfg.hf_token.get_secret_value() if cfg.hf_token else None
    known.check_plan(plan)
    if repo:  # ingest needs an adapter: a name that has none is a typo or a step skipped
        known.check_repos(
            repo, known.adapter_repos(), "dataset", "--repo", "propose one: draftset adapters propose OWNER/NAME"
        )
    repos = repos_to_ingest(catalog(), plan, repo)
    with _progress() as progress:
        results = ingest(
            catalog(),
            cfg.home,
            repos,
            endpoint=cfg.hf_endpoint,
            token=token,
            fresh=fresh,
            progress=progress,
            plan_id=plan,
            all_rows=all_rows,
            workers=workers,
            executor=_executor(executor),
            **values,
        )
    _print_ingest([(r.repo_id, r.counts, r.error, r.hint) for r in results])
    console.print(f"quarantine files: {Home(cfg.home).normalized_root}/*/quarantine.jsonl")


def _print_ingest(results: list[tuple[str, dict[str, int], str | None, str | None]]) -> None:
    """The ingest table (one row per dataset, then TOTAL) and each failure with its fix; raises when any failed.
    The same for a local run and a job of the service: (repo_id, counts, error, hint) per dataset."""
    total: dict[str, int] = {}
    rows = []
    for repo_id, counts, error, _ in results:
        rows.append(_counts_row(repo_id, counts, "failed" if error else "ok"))
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    rows.append(_counts_row("TOTAL", total, f"{sum(1 for r in results if not r[2])}/{len(results)} ok"))
    print_table(["dataset", "rows in", "records out", "skipped", "dropped", "errors", "status"], rows, title="ingest")
    failed = [r for r in results if r[2]]
    for repo_id, _, error, hint in failed:
        console.print(
            f"[red]{safe(repo_id)}[/]: {safe(error)}" + (f"\n  [yellow]next:[/] {safe(hint)}" if hint else ""),
            highlight=False,
        )
    if failed:
        raise DraftsetError(
            f"ingest failed for {len(failed)} of {len(results)} dataset(s): " + ", ".join(r[0] for r in failed),
            hint="the other datasets' shards are kept; fix the named ones and re-run (resumes by id)",
        )


def _ingest_remote(client: Any, body: dict[str, Any], workers: int, executor: str) -> None:
    """Ingest as a job of the service: the same table, failures and exit status as a local run."""
    if workers != 1 or executor != "local":
        raise DraftsetError(
            "--workers and --executor are not sent through the service (it ingests one dataset at a time)",
            hint="leave them out, or run the ingest on the service's host while the service is stopped",
        )
    with console.status("ingest through the service") as spinner:
        job = client.ingest(body, on_event=lambda e: _ingest_event(spinner, e))
    result = job.get("result") or {}
    if result.get("datasets") or job["status"] == "ok":
        _print_ingest([(d["repo_id"], d["counts"], d["error"], d["next"]) for d in result["datasets"]])
    if job["status"] != "ok":  # failed before any dataset ran, or the service stopped under it
        raise DraftsetError(f"service job {job['job_id']} {job['status']}: {job.get('error')}", hint=job.get("next"))
    console.print(f"quarantine files (on the service's host): {safe(result['quarantine'])}", highlight=False)


def _ingest_event(spinner: Any, event: dict[str, Any]) -> None:
    """A service ingest job's progress on the spinner line (nothing is drawn when the output is not a terminal)."""
    if event.get("stage") == "ingest":
        spinner.update(f"ingest {event.get('n')}/{event.get('of')}: {safe(event.get('repo_id'))} {event.get('status')}")


def dedup_cmd(
    repo: list[str] | None = typer.Option(None, "--repo", help="Sources to dedup together (default: all ingested)."),
    threshold: float | None = _threshold(DedupConfig),
    max_prompt_tokens: int | None = _max_tokens(DedupConfig),
    min_prompt_tokens: int | None = _min_tokens(DedupConfig),
    tokenizer: Path | None = _TOKENIZER,
    workers: int = _WORKERS,
    executor: str = _EXECUTOR,
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Drop exact and near-duplicate prompts across sources, and too long/short prompts.

    Every decision (kept, or which row it duplicates and how similar) goes to the `dedup` table (`draftset sql`).
    The same decisions go to data/dedup/decisions.parquet; `mix` runs this stage itself."""
    from pipeline.dedup.run import run_dedup
    from pipeline.ingest.tolerance import held_back
    from pipeline.targets.lengths import TokenCounter

    json_listing(as_json)

    values = stage_settings(
        DedupConfig,
        config_file,
        {
            "repos": repo or None,
            "threshold": threshold,
            "max_prompt_tokens": max_prompt_tokens,
            "min_prompt_tokens": min_prompt_tokens,
        },
        settable=["repos", "threshold", "num_perm", "ngram", "min_prompt_tokens", "max_prompt_tokens"],
    )
    home = settings().home
    ingested = Home(home).normalized_repos()
    if values.get("repos"):
        known.check_repos(
            values["repos"],
            ingested,
            "ingested dataset",
            "--repo",
            "ingest it first: draftset ingest --repo OWNER/NAME",
        )
    # By default, as mix does: a dataset held back by its bad-row threshold is left out (and named), so
    # this report counts what a mix would dedup; naming it with --repo still includes it.
    held = {} if values.get("repos") else held_back(home)
    values["repos"] = list(values.get("repos") or [r for r in ingested if r not in held])
    if held:
        console.print(
            f"held back by ingest's bad-row threshold, left out: {', '.join(sorted(held))}"
            " (--repo names one to include it)",
            highlight=False,
            markup=False,
        )
    if not values["repos"]:
        raise DraftsetError(
            "nothing to dedup: no dataset has been ingested" + (" that is not held back" if held else ""),
            hint="run `draftset ingest` first" if not held else "fix the held-back adapters and re-ingest them",
        )
    counter = TokenCounter.resolve(tokenizer, home)
    config = DedupConfig(**values, length_unit=counter.method)
    with _progress() as progress:
        result = run_dedup(
            catalog(), home, config, Home(home).dedup, counter, progress, workers=workers, executor=_executor(executor)
        )
    print_table(
        ["stage", "in", "kept", "skipped", "dropped", "errors", "status"],
        [_counts_row("dedup", result.counts, "ok")],
        title=f"dedup ({counter.method})",
    )
    console.print(f"provenance: draftset sql \"SELECT * FROM dedup WHERE stage_run_id = '{result.run_id}'\"")


def mix_cmd(
    name: str = typer.Argument(..., help="Name of the mix (folder data/mix/NAME)."),
    plan: str | None = typer.Option(None, "--plan", help="Plan whose per-source quotas to take (default: latest)."),
    samples: int | None = field_option(
        MixConfig, "samples", help="Records in the mix (default: the plan's).", show_default=False
    ),
    weight: list[str] | None = typer.Option(
        None, "--weight", help="CATEGORY=W: mix every ingested source by category weight instead of a plan."
    ),
    seed: int | None = field_option(MixConfig, "seed", help="Selection seed: same inputs + seed = same mix."),
    threshold: float | None = _threshold(MixConfig),
    max_prompt_tokens: int | None = _max_tokens(MixConfig),
    min_prompt_tokens: int | None = _min_tokens(MixConfig),
    tokenizer: Path | None = _TOKENIZER,
    overwrite: bool = typer.Option(False, "--overwrite", help="Rebuild an existing mix with a different config."),
    workers: int = _WORKERS,
    executor: str = _EXECUTOR,
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Dedup the plan's sources (without a plan: every ingested one) and select N records into data/mix/NAME/.

    Each source gives its quota from the plan; what a source lacks after dedup is taken from the others in
    proportion to their quotas. Records are picked deterministically under --seed. manifest.json records
    per source the quota, what was taken and the shortfall, and which sources were left out."""
    from pipeline.mix.run import run_mix

    values = stage_settings(
        MixConfig,
        config_file,
        {
            "plan_id": plan,
            "samples": samples,
            "seed": seed,
            "threshold": threshold,
            "max_prompt_tokens": max_prompt_tokens,
            "min_prompt_tokens": min_prompt_tokens,
        },
        settable=MIX_SETTABLE,
    )
    weights = _weights(weight or [])
    known.check_plan(values.get("plan_id"))
    if weights and values.get("plan_id"):
        raise typer.BadParameter("give --plan or --weight, not both", param_hint="--weight")

    with json_output(as_json) as document, _progress() as progress:
        result = run_mix(
            catalog(),
            settings().home,
            name,
            weights=weights or None,
            tokenizer=tokenizer,
            overwrite=overwrite,
            progress=progress,
            workers=workers,
            executor=_executor(executor),
            **values,
        )
        m = result.manifest
        figures = mix_figures(m)
        document["figures"] = {k: v for k, v in asdict(figures).items() if k != "sources"} | {
            "summary": figures.summary(),
            "path": str(result.path),
        }
        ingested = m["sources"]
        print_table(
            ["source", "category", "ingested", "dedup dropped", "quota", "target", "selected", "short", "received"],
            [
                [
                    f.source,
                    f.category,
                    ingested[f.source].get("ingested"),
                    ingested[f.source].get("dedup_dropped"),
                    "-" if f.quota is None else f.quota,
                    f.target,
                    f.selected,
                    f.short or "-",
                    f.received or "-",
                ]
                for f in figures.sources
            ],
            title=f"mix {name}",
        )
        console.print(
            "target: the quota scaled to N · short: target not met, passed on · received: taken up from others",
            style="dim",
        )
        state = "unchanged (same config; nothing rebuilt)" if result.reused else "written"
        console.print(f"{figures.selected:,} records {state} → {safe(result.path)}")
        console.print(literal(figures.summary(), style="yellow" if figures.unmet else ""))
        if m.get("missing_sources"):
            console.print(f"[yellow]planned but not ingested:[/] {safe(', '.join(m['missing_sources']))}")
        for why in (m.get("held_back_sources") or {}).values():
            console.print(f"[yellow]held back (not mixed):[/] {safe(why)}", highlight=False)
        if m.get("unplanned_sources"):
            console.print(
                f"[yellow]ingested but not in plan {safe(m['plan_id'])} (left out):[/] "
                f"{safe(', '.join(m['unplanned_sources']))}"
            )


def _weights(pairs: list[str]) -> dict[str, float]:
    """--weight "general chat=2" --weight math=1 -> {"general chat": 2.0, "math": 1.0}."""
    weights: dict[str, float] = {}
    for pair in pairs:
        category, sep, value = pair.rpartition("=")
        try:
            w = float(value)
        except ValueError:
            w = -1.0
        if not sep or not category.strip() or not (w >= 0 and math.isfinite(w)):  # refuses nan and inf too
            raise typer.BadParameter(f"{pair!r} is not CATEGORY=WEIGHT (a finite weight >= 0)", param_hint="--weight")
        weights[category.strip()] = w
    return weights


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest_cmd)
    app.command("dedup")(dedup_cmd)
    app.command("mix")(mix_cmd)
