"""`draftset check draft|accept-length|serve|estimate`: eval's checks, registered on the CLI by eval itself.

pipeline's CLI shell finds this module through the `draftset.commands` entry-point group (pyproject.toml),
so pipeline never imports eval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from catalog.errors import DraftsetError
from eval.checks.wiring_json import interval_json, wiring_record
from pipeline.cli.common import JSON_OPTION, catalog, console, json_listing, print_table, resolve_named


def register_jobs(register: Any) -> None:
    """The service's `check` job (pipeline/servers/service/stages.py finds this through the entry-point group)."""
    from eval.service_jobs import register_check

    register_check(register)


check_app = typer.Typer(
    help="Check a trained draft, an SGLang serving command, or the expected speedup.", no_args_is_help=True
)


@check_app.command("draft")
def check_draft_cmd(
    draft: str = typer.Argument(..., help="exported draft name or directory"),
    captures: str = typer.Option(
        ..., help="capture name or dir (training and held-out samples); a build for a draft trained online"
    ),
    model: Path | None = typer.Option(None, help="target dir (default: the manifest's)"),
    max_samples: int = typer.Option(64),
    max_new_tokens: int = typer.Option(64, min=1, help="tokens per prompt the replayed decode makes"),
    target_al: float = typer.Option(3.0, help="forecast: the accept length you want"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Per-step accuracy, the accept length decoding would measure (held-out first), and wrong wirings."""
    json_listing(as_json)
    from eval.checks.draft_check import check_draft
    from eval.specdecode import records

    draft_dir = resolve_named(draft, "drafts")
    r = check_draft(draft_dir, resolve_named(captures, "captures"), model, max_samples, max_new_tokens)
    results = [w for w in [r.heldout, r.train] if w is not None] + r.wirings
    rows = [
        [
            w.name,
            w.hf_ids,
            " ".join(f"{a:.3f}" for a in w.step_accuracy),
            str(w.interval) if w.interval else f"{w.accept_length:.3f}",
            f"[{w.prompt_interval.low:.3f}, {w.prompt_interval.high:.3f}]" if w.prompt_interval else "-",
            " ".join(f"{a:.3f}" for a in w.step_acceptance),
            f"{w.independent_al:.3f}",
        ]
        for w in results
    ]
    print_table(
        [
            "wiring",
            "HF taps",
            "accuracy per step",
            "expected AL (95%, rounds)",
            "over prompts (95%)",
            "acceptance per step",
            "1+ΣΠacc",
        ],  # fmt: skip
        rows,
        title=f"check draft: decoding replayed on teacher-forced rows, {r.steps} steps, {max_new_tokens} tokens a "
        f"prompt; wirings on {r.n_samples} {r.wirings_on} rows",
        records=[wiring_record(w) for w in results],
    )
    console.print(r.trust())
    console.print(r.verdict())
    for name, line in r.separations():
        if line != "separated":
            console.print(f"  {name}: {line}")
    if r.wirings and r.target_dir is not None:  # wirings are only computed with the target at hand
        records.save(catalog(), records.estimate_rows(r.wirings, draft_dir, r.target_dir, r.steps, r.n_samples))
    measured = [e for e in records.load(catalog(), draft_dir) if e["method"] == "specdecode"]
    estimates = {w.name: w.accept_length for w in r.wirings}
    if measured:
        print_table(
            ["wiring", "steps", "measured AL", "estimated AL", "tok/s (plain)", "prompts", "tokens"],
            [
                [
                    e["wiring"],
                    e["steps"],
                    f"{e['accept_length']:.3f}",
                    f"{estimates[e['wiring']]:.3f}" if e["steps"] == r.steps and e["wiring"] in estimates else "",
                    f"{e['tokens_per_s']:.1f} ({e['baseline_tokens_per_s']:.1f})",
                    e["n_prompts"],
                    e["n_tokens"],
                ]
                for e in measured
            ],
            title="accept length measured by speculative decoding (draft_evals)",
            records=[
                {
                    **{k: e[k] for k in ("wiring", "steps", "accept_length", "n_prompts", "n_tokens")},
                    "estimated_accept_length": estimates.get(e["wiring"]) if e["steps"] == r.steps else None,
                    "tokens_per_s": e["tokens_per_s"],
                    "baseline_tokens_per_s": e["baseline_tokens_per_s"],
                }
                for e in measured
            ],
        )
    else:
        console.print(
            f"no measured accept length yet: draftset check accept-length {draft} --captures {captures}",
            highlight=False,
            soft_wrap=True,
        )
    # this draft's own optimizer steps (its resolved.json): the forecast speaks for its recipe, not the points'
    _print_forecast(
        records.train_samples(draft_dir), r.steps, target_al, records.train_recipe(draft_dir)[0], r.target_dir
    )
    if r.configured_is_best is False:
        raise typer.Exit(1)


def _print_forecast(
    samples: int | None, steps: int, target_al: float, train_steps: int | None, target: Path | None
) -> None:
    """The data forecast from this home's points measured on `target` (or, labelled, the reference curve), at the
    optimizer steps the run trains (`train_steps`, when known: the fit predicts at them; else at its points'
    typical). `target` None (not at hand): the points of every target, an intercept each."""
    from agents.forecast import REFERENCE, fit, line, measured_points

    points = measured_points(catalog(), target)
    source = ""
    if fit(points, steps) is None:
        points, source = REFERENCE, "; reference curve of SmolLM2-135M, another target: run `draftset check pilot`"
    f = fit(points, steps)
    if f is None or samples is None:
        return
    text = line(f, samples, target_al, source=source, train_steps=train_steps)
    console.print(f"forecast: {text}", highlight=False, soft_wrap=True)


@check_app.command("accept-length")
def check_accept_length_cmd(
    draft: str = typer.Argument(..., help="exported draft name or directory"),
    captures: str = typer.Option(
        ...,
        help="capture name or dir (a build for a draft trained online): prompts are its held-out samples, "
        "cut at the generation prompt",
    ),
    model: Path | None = typer.Option(None, help="target dir (default: the manifest's)"),
    steps: list[int] | None = typer.Option(None, help="draft tokens per round (repeatable; default: as trained)"),
    prompts: int = typer.Option(16, min=1, help="held-out prompts to decode"),
    max_new_tokens: int = typer.Option(64, min=1, help="tokens to generate per prompt"),
    wrong_wirings: bool = typer.Option(
        True, "--wrong-wirings/--configured-only", help="also decode under every wrong wiring"
    ),
    device: str = typer.Option("auto", help="auto | cpu | cuda:N"),
    dtype: str = typer.Option("float32", help="float32 | bfloat16"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Accept length measured by real speculative decoding (chain, greedy verification), per wiring."""
    json_listing(as_json)
    from eval.specdecode import records
    from eval.specdecode.evaluate import measure

    m = measure(
        resolve_named(draft, "drafts"),
        resolve_named(captures, "captures"),
        model,
        steps,
        prompts,
        max_new_tokens,
        wrong_wirings,
        device,
        dtype,
    )
    records.save(catalog(), records.specdecode_rows(m))
    print_table(
        [
            "wiring",
            "HF taps",
            "steps",
            "accept length (95%, rounds)",
            "over prompts (95%)",
            "acceptance per step",
            "tok/s",
            "speedup",
            "ties",
        ],  # fmt: skip
        [
            [
                r.name,
                r.hf_ids,
                r.steps,
                str(r.interval),
                f"[{r.prompt_interval.low:.3f}, {r.prompt_interval.high:.3f}]" if r.prompt_interval else "-",
                " ".join(f"{a:.3f}" for a in r.step_acceptance),
                f"{r.tokens_per_s:.1f}",
                f"{r.tokens_per_s / m.greedy_tokens_per_s:.2f}x",
                r.ties,
            ]
            for r in m.runs
        ],
        title=f"speculative decoding on {m.device}: {m.n_prompts} held-out prompts, plain greedy "
        f"{m.greedy_tokens_per_s:.1f} tok/s ({m.greedy_tokens} tokens); output equals plain greedy",
        records=[
            {
                "wiring": r.name,
                "hf_taps": r.hf_ids,
                "steps": r.steps,
                "accept_length_interval": interval_json(r.interval),
                "accept_length_prompt_interval": interval_json(r.prompt_interval),
                "rounds_per_prompt": r.per_prompt,
                "step_acceptance_fraction": list(r.step_acceptance),
                "tokens_per_s": r.tokens_per_s,
                "plain_tokens_per_s": m.greedy_tokens_per_s,
                "speedup_ratio": r.tokens_per_s / m.greedy_tokens_per_s,
                "ties": r.ties,
            }
            for r in m.runs
        ],
    )
    for name, k, line in m.separations():
        if line != "separated":
            console.print(f"{name} at {k} steps: {line}", highlight=False)


@check_app.command("pilot")
def check_pilot_cmd(
    build: Path = typer.Argument(..., help="build dir: its rows are split into nested subsets"),
    model: Path = typer.Option(..., help="the target dir (online training makes the taps with it)"),
    out: Path = typer.Option(..., help="where the subsets' builds and drafts go"),
    fractions: str = typer.Option("0.125,0.25,0.5", help="subset sizes as fractions of the training rows"),
    budget_min: float | None = typer.Option(None, help="stop starting subsets that would not fit in this time"),
    epochs: int | None = typer.Option(None, help="passes over each subset (default: the target's recipe)"),
    lr: float | None = typer.Option(None, help="learning rate (default: the target's recipe)"),
    batch_tokens: int | None = typer.Option(None, help="tokens per batch (default: the target's recipe)"),
    ttt_steps: int | None = typer.Option(None, help="training-time-test steps (default: the target's recipe)"),
    steps: list[int] | None = typer.Option(None, help="draft tokens per round to measure (default: 3)"),
    prompts: int = typer.Option(16, min=1, help="held-out prompts to decode (the same for every subset)"),
    max_new_tokens: int = typer.Option(64, min=1),
    target_al: float = typer.Option(3.0, help="forecast: the accept length you want"),
    device: str = typer.Option("auto"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Train on nested subsets of a build, measure each, record the points and print the forecast.

    Each subset trains as `draftset train --online` would: what is not given here comes from the target's recipe
    (pipeline/train/recipes.py, the stage resolves it), so the points measure the recipe a real run gets."""
    json_listing(as_json)
    from eval.forecast_pilot import run_pilot
    from eval.specdecode import records
    from pipeline.train.loop import TrainConfig, run_train
    from pipeline.train.recipes import planned_steps

    given: dict[str, Any] = {  # only what was given: the rest is the recipe's
        k: v
        for k, v in {"epochs": epochs, "lr": lr, "batch_tokens": batch_tokens, "ttt_steps": ttt_steps}.items()
        if v is not None
    }

    def config(build_dir: Path, draft_dir: Path) -> TrainConfig:
        return TrainConfig(
            capture_dir=None,
            build_dir=build_dir,
            model_dir=model,
            online=True,
            out_dir=draft_dir,
            device=device,
            log_every=1000,
            **given,
        )

    def train(sub: Path, draft_dir: Path) -> None:
        run_train(config(sub, draft_dir), catalog())

    steps = steps or [3]
    pilot = run_pilot(
        build,
        model,
        out,
        [float(f) for f in fractions.split(",")],
        budget_min * 60 if budget_min else None,
        train,
        steps,
        prompts,
        max_new_tokens,
        device=device,
        record=lambda m: records.save(catalog(), records.specdecode_rows(m)),
    )
    print_table(
        ["fraction", "train samples", "optimizer steps", "recipe", "steps", "accept length (95%)", "seconds"],
        [
            [
                f"{p.fraction:g}",
                f"{p.train_samples:,}",
                p.train_steps,
                p.recipe or "given",
                r.steps,
                str(r.interval),
                f"{p.seconds:.0f}",
            ]
            for p in pilot.points
            for r in p.measurement.runs
        ],
        title=f"pilot on {build}: nested subsets, the same held-out prompts (recorded in draft_evals)",
        records=[
            {
                "fraction": p.fraction,
                "train_samples": p.train_samples,
                "train_steps": p.train_steps,
                "recipe": p.recipe,
                "steps": r.steps,
                "accept_length_interval": interval_json(r.interval),
                "seconds": p.seconds,
            }
            for p in pilot.points
            for r in p.measurement.runs
        ],
    )
    for fraction, why in pilot.skipped:
        console.print(f"[yellow]skipped[/] fraction {fraction:g}: {why}")
    if pilot.points:
        full = round(pilot.points[-1].train_samples / pilot.points[-1].fraction)
        # the steps the same settings would train on the whole build: the recipe resolved over its batches
        full_steps, _ = planned_steps(config(build, out / "full"), model, pilot.full_lengths)
        for k in steps:
            _print_forecast(full, k, target_al, full_steps, model)


@check_app.command("serve")
def check_serve_cmd(
    draft: str = typer.Argument(..., help="exported draft name or directory"),
    command: list[str] = typer.Argument(
        ...,
        help="-- python -m sglang.launch_server ... | sglang "
        "serve MODEL ... | vllm serve MODEL --speculative-config JSON",
    ),
    system_prompt: str | None = typer.Option(None, help="system prompt clients will send"),
    thinking: bool | None = typer.Option(None, "--thinking/--no-thinking", help="thinking mode clients will request"),
    target_config: Path | None = typer.Option(
        None, help="the target's config.json (default: the command's model dir, then the manifest's)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Lint a launch command against the draft as the engine reads it; exit 1 on any error."""
    import json
    import shlex

    from rich.markup import escape

    from eval.checks.serve_check import check_serve

    r = check_serve(resolve_named(draft, "drafts"), command, system_prompt, thinking, target_config)
    if as_json:
        print(json.dumps(r.as_json(), indent=1))
        if r.errors:
            raise typer.Exit(1)
        return
    console.print(
        f"{r.engine}: {r.parser}; target config from {r.target_origin}; {'; '.join(r.rules_applied)}",
        highlight=False,
        markup=False,
    )
    if r.clean:
        console.print("[green]clean:[/] the command matches the draft's training configuration")
        return
    for f in r.findings:  # one block per finding (no table): long flags and paths stay whole in narrow terminals
        console.print(
            f"[{'red' if f.severity == 'error' else 'yellow'}]{f.severity.upper()}[/] "
            + escape(f"{f.rule}  {f.flag}\n  {f.problem}\n  why: {f.why}\n  fix: {f.fix}\n  source: {f.source}"),
            highlight=False,
            soft_wrap=True,
        )
    fixed = r.corrected()
    if fixed and shlex.split(fixed) != list(command):
        console.print("corrected command:\n" + fixed, highlight=False, soft_wrap=True, markup=False)
    else:
        console.print("the command needs no flag change; fix the draft as above", highlight=False)
    if r.errors:
        raise typer.Exit(1)


@check_app.command("estimate")
def check_estimate_cmd(
    accept_length: list[float] = typer.Option(..., help="accept length(s) to evaluate"),
    steps: int = typer.Option(3),
    draft_cost: float = typer.Option(0.05, help="one draft step, in target decode steps"),
    verify_cost: float = typer.Option(1.1, help="one verify pass, in target decode steps"),
    baseline_tps: float | None = typer.Option(None, help="calibrate: plain decoding tok/s"),
    observed_tps: float | None = typer.Option(None, help="calibrate: speculative tok/s"),
    observed_accept_length: float | None = typer.Option(None),
    as_json: bool = JSON_OPTION,
) -> None:
    """Expected speedup from accept length and draft/verify cost (or calibrated from a measured run)."""
    json_listing(as_json)
    from eval.checks.estimate import calibrated_round_cost, estimate, round_cost

    calib = (baseline_tps, observed_tps, observed_accept_length)
    calibrated = any(v is not None for v in calib)
    if baseline_tps is not None and observed_tps is not None and observed_accept_length is not None:
        cost = calibrated_round_cost(baseline_tps, observed_tps, observed_accept_length)
    elif calibrated:
        raise DraftsetError(
            "calibration needs all of --baseline-tps, --observed-tps, --observed-accept-length",
            hint="e.g. --baseline-tps 90 --observed-tps 82.3 --observed-accept-length 2.1",
        )
    else:
        cost = round_cost(steps, draft_cost, verify_cost)
    found = estimate(accept_length, cost)
    rows = [
        [
            f"{e.accept_length:.2f}",
            f"{e.speedup:.3f}x",
            f"{baseline_tps * e.speedup:.1f}" if baseline_tps is not None and calibrated else "",
            "faster" if e.speedup > 1 else "SLOWER",
        ]
        for e in found
    ]
    print_table(
        ["accept length", "speedup", "tok/s", "vs plain"],
        rows,
        title=f"round cost {cost:.3f} target steps",
        records=[
            {
                "accept_length": e.accept_length,
                "speedup_ratio": e.speedup,
                "tokens_per_s": baseline_tps * e.speedup if baseline_tps is not None and calibrated else None,
                "round_cost_target_steps": cost,
                "faster": e.speedup > 1,
            }
            for e in found
        ],
    )
    console.print(f"break-even accept length: {cost:.2f}")


def register(app: typer.Typer) -> None:
    app.add_typer(check_app, name="check")
