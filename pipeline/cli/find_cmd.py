"""`draftset find`: one agent per category searches the Hub; results and a costed plan land in the catalog."""

from __future__ import annotations

import asyncio
import json
from contextlib import nullcontext
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
import yaml
from pydantic import ValidationError

from agents.configuration import FindConfig
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.names import require_known
from catalog.untrusted import shell_word
from pipeline.cli.common import console, err_console, settings

if TYPE_CHECKING:
    from agents.run import FindEnv, FindRequest
    from pipeline.servers.service.client import Client

# langgraph, huggingface_hub and openai load only when `find` runs, so `draftset --help` stays fast.


class Policy(str, Enum):
    heuristic = "heuristic"
    llm = "llm"


def _config(path: Path | None, policy: Policy) -> FindConfig:
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            raw = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise DraftsetError(f"cannot read find config {path}: {exc}") from exc
    try:
        return FindConfig(**{**raw, "policy": policy.value})
    except (ValidationError, TypeError) as exc:
        raise DraftsetError(
            f"invalid find config {path}: {exc}".replace("\n", " "),
            hint="see agents/configuration.py for the fields and their limits",
        ) from exc


def _env() -> FindEnv:
    """Endpoints and secrets from settings; the LLM client exists only when an endpoint is configured."""
    from agents.run import FindEnv

    s = settings()
    client = None
    if s.llm_base_url:
        import openai

        key = s.llm_api_key.get_secret_value() if s.llm_api_key else "none"
        client = openai.AsyncOpenAI(base_url=s.llm_base_url, api_key=key, max_retries=0)
    token = s.hf_token.get_secret_value() if s.hf_token else None
    from pipeline.train.recipes import steps_for_tokens  # the forecast speaks for the recipe `train` will apply

    return FindEnv(
        home=s.home,
        endpoint=s.hf_endpoint,
        viewer_base=s.viewer_base,
        token=token,
        llm_client=client,
        llm_model=s.llm_model,
        train_steps=steps_for_tokens,
    )


async def _drive(
    env: FindEnv, request: FindRequest | None, resume: str | None, run_id: str, quiet: bool, retry_failed: bool = False
) -> dict[str, Any]:
    from agents.run import stream_find
    from pipeline.cli.find_view import AgentProgress

    final: dict[str, Any] = {}
    # The live agent table is progress, for a terminal: piped, its last frame would be left glued to the output.
    with nullcontext() if quiet or not console.is_terminal else AgentProgress() as progress:
        async for event in stream_find(env, request, resume=resume, run_id=run_id, retry_failed=retry_failed):
            if event.get("stage") == "resume" and not quiet:  # what the resume will redo, before it does it
                for line in event["redo"]:
                    err_console.print(f"resume {run_id}: {line}", highlight=False)
            if progress is not None:
                progress.update(event)
            final = event
    return final


def find(
    domain: str = typer.Argument(None, help='What to find more of, e.g. "agentic coding".'),
    samples: int = typer.Option(100_000, "--samples", "-n", min=1, help="How many NEW samples to plan for."),
    policy: Policy = typer.Option(
        Policy.heuristic,
        help="heuristic (offline, default) or llm (DRAFTSET_LLM_BASE_URL; falls back to heuristic on bad replies).",
    ),
    resume: str = typer.Option(
        None,
        "--resume",
        metavar="RUN_ID",
        help="Continue an interrupted run with its saved settings; finished agents are not repeated.",
    ),
    retry_failed: bool = typer.Option(
        False,
        "--retry-failed",
        help="With --resume: run the agents that failed (or never finished) again, then re-rank and re-record.",
    ),
    config: Path = typer.Option(
        None,
        "--config",
        exists=True,
        dir_okay=False,
        help="YAML/JSON FindConfig overrides (budgets, throughput, share cap...).",
    ),
    propose: int = typer.Option(
        5,
        "--propose",
        min=0,
        help="Then infer and contract-test adapters for the N highest-ranked planned datasets (0 or --json: skip).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document instead of tables."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also every agent's candidates, the relevance table and the review SQL."
    ),
) -> None:
    """Search the Hub with one concurrent agent per category, catalog the candidates, plan "N more" samples."""
    if retry_failed and not resume:
        raise DraftsetError("--retry-failed needs --resume RUN_ID", hint="draftset find --resume RUN_ID --retry-failed")
    if not domain and not resume:
        raise DraftsetError(
            "no domain given", hint='draftset find "agentic coding" --samples 100000, or draftset find --resume RUN_ID'
        )
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # DRAFTSET_SERVER: the service runs it (and owns the catalog)
        _find_remote(client, domain, samples, policy, 0 if as_json else propose, resume, config, as_json)
        return
    from agents.run import FindRequest, new_run_id

    cfg = _config(config, policy)
    from catalog.hub import check_reachable
    from pipeline.cli import known

    if resume:  # before the live table: a mistyped run id is one line, not an empty table and an error
        require_known("find run", resume, known.find_runs(), where="--resume", hint="use the run id find printed")

    check_reachable(settings().hf_endpoint)  # before the live table: a dead Hub is one line, not an empty table
    request = None if resume else FindRequest(domain=domain, samples=samples, config=cfg)
    run_id = resume or new_run_id()
    if not as_json:
        err_console.print(
            f"run [bold]{run_id}[/] — if interrupted: draftset find --resume {shell_word(run_id)}", highlight=False
        )
    try:
        final = asyncio.run(_drive(_env(), request, resume, run_id, as_json, retry_failed))
    except KeyboardInterrupt:
        raise DraftsetError(
            f"find {run_id} interrupted while the agents searched: every agent that finished is saved in "
            f"{Home(settings().home).find_checkpoints.name}; nothing is ranked or planned yet",
            hint=f"draftset find --resume {shell_word(run_id)}  (runs the unfinished agents only, then ranks, "
            "plans and proposes adapters)",
        ) from None
    _report(final, as_json, verbose)
    plan_id = final["state"]["plan"]["plan_id"]
    if propose and not as_json:
        _propose_planned(run_id, plan_id, propose)
    if not as_json:
        console.print(
            f"next: draftset adapters list, then draftset adapters show REPO for each (plan {plan_id})", highlight=False
        )


def _find_remote(
    client: Client,
    domain: str,
    samples: int,
    policy: Policy,
    propose: int,
    resume: str | None,
    config: Path | None,
    as_json: bool,
) -> None:
    from pipeline.cli.find_view import AgentProgress

    if resume or config:
        raise DraftsetError(
            "--resume and --config are not sent through the service",
            hint="run them on the service's host without DRAFTSET_SERVER while the service is stopped",
        )
    with nullcontext() if as_json else AgentProgress() as progress:
        job = client.find(domain, samples, policy.value, propose, on_event=progress.update if progress else None)
    result = job["result"]
    if as_json:
        typer.echo(json.dumps(job, default=str))
        return
    if result.get("plan"):  # a service of this version sends the plan: the same table as a local find
        from pipeline.cli.find_view import show_plan

        show_plan(result["plan"])
        _agents_line(result["summary"])
    console.print(
        f"{result['domain']}: {result['samples_planned']} samples from {result['datasets']} datasets: "
        f"{result['headline']} (job {job['job_id']}, run {result['run_id']} on {client.url})",
        highlight=False,
    )
    if result["adapters_proposed"]:
        console.print(
            f"adapters proposed: {' '.join(result['adapters_proposed'])}; review them at {client.url}/adapters",
            highlight=False,
        )
    console.print(
        f"next: draftset adapters list, then draftset adapters show REPO for each (plan {result['plan_id']})",
        highlight=False,
    )


def _propose_planned(run_id: str, plan_id: str, top: int) -> None:
    """Adapters are proposed (never approved) for the plan's biggest items, so review can start at once.

    Checkpointed one dataset at a time (agents/proposals.py): Ctrl-C or a crash keeps every finished
    proposal, says what is saved and what `draftset find --resume RUN_ID` will propose (the rest only)."""
    from agents import proposals
    from pipeline.cli.adapters_cmd import propose_many
    from pipeline.cli.common import catalog

    phase = proposals.start(catalog(), run_id, plan_id, top)
    if not phase.targets:
        return
    console.rule(f"adapters proposed for the {len(phase.targets)} highest-ranked planned datasets")
    final = proposals.run(
        catalog(), run_id, plan_id, top, lambda todo, on_outcome: propose_many(todo, on_outcome=on_outcome)
    )
    if phase.done:  # the table above shows this session's proposals only: the whole phase's count
        console.print(f"find {run_id}: {final.tally()}", highlight=False)


def _report(final: dict[str, Any], as_json: bool, verbose: bool = False) -> None:
    from agents.recording import review_queries
    from pipeline.cli.find_view import show_candidates, show_plan, show_relevance, show_review

    state = final["state"]
    plan, summary = state["plan"], state["summary"]
    queries = review_queries(state["run_id"], plan["plan_id"])
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "run_id": state["run_id"],
                    "domain": state["domain"],
                    "summary": summary,
                    "agents": [{k: v for k, v in r.items() if k != "candidates"} for r in state["reports"]],
                    "candidates": [{k: v for k, v in c.items() if k != "schemas"} for c in state["candidates"]],
                    "plan": plan,
                    "review": queries,
                },
                default=str,
            )
        )
    else:
        # The default is what a user decides on (the plan and what to do next); --verbose adds how it was found.
        if verbose:
            show_candidates(state["candidates"])
            show_relevance(state["candidates"])
        show_plan(plan)
        _agents_line(summary)
        line = llm_line(final.get("llm_probe"), summary, state["reports"], state["run_id"])
        if line:
            console.print(line, highlight=False, markup=False)
        if verbose:
            show_review(queries)
        else:
            console.print(
                f"{len(state['candidates']):,} candidates ranked; --verbose shows them, the relevance table and "
                f'{len(queries)} review queries (or: draftset sql "SELECT * FROM candidates")',
                style="dim",
                highlight=False,
            )
    if summary["agents_ok"] == 0:
        errors = [r["error"] for r in state["reports"] if r["error"]]
        raise DraftsetError(
            f"all {len(state['reports'])} category agents failed: {errors[0] if errors else '?'}",
            hint="check that HF_ENDPOINT is reachable (draftset hub serve DIR for the local Hub), then run find again",
        )


def _agents_line(summary: dict[str, Any]) -> None:
    console.print(
        f"agents: {summary['agents_ok']} ok, {len(summary['agents_failed'])} failed "
        f"{summary['agents_failed'] or ''} · hub calls {summary['hub_calls']} · cache hits "
        f"{summary['cache_hits']} · llm fallbacks {summary['llm_fallbacks']}"
    )


def llm_line(
    probe: dict[str, Any] | None, summary: dict[str, Any], reports: list[dict[str, Any]], run_id: str
) -> str | None:
    """One line on the llm policy: what the endpoint honours, tokens, fallbacks by cause and the first one's
    detail (it names the LLM endpoint, so an HTML page from a wrong DRAFTSET_LLM_BASE_URL reads as that)."""
    if probe is None:
        return None
    forms = [name for name in ("json_schema", "json_object_schema", "tools") if probe.get(name)] or ["prompt only"]
    line = (
        f"llm {probe['model']} at {probe['endpoint']}: {'+'.join(forms)} · calls {summary['llm_calls']} · "
        f"tokens {summary['llm_tokens']} · fallbacks {summary['llm_fallbacks']}/{len(reports)}"
    )
    causes = summary.get("llm_fallback_causes") or {}
    if causes:
        line += " (" + ", ".join(f"{cause} {n}" for cause, n in causes.items()) + ")"
        first = next((e for r in reports for e in r.get("llm_events", []) if e["outcome"] == "fallback"), None)
        if first:
            line += f" · first: {first['detail']}"
        line += (
            f' · next: draftset sql "SELECT category, step, cause, detail, outcome FROM llm_events '
            f"WHERE run_id = '{run_id}' ORDER BY category, seq\""
        )
    return line


def register(app: typer.Typer) -> None:
    app.command("find")(find)
