"""`draftset hub serve|check`: run the local Hub, and check that HF_ENDPOINT answers."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from pipeline.cli.as_json import JSON_OPTION, json_listing
from pipeline.cli.common import console, print_table, safe, settings
from pipeline.servers.http import LOOPBACK

hub_app = typer.Typer(
    help="Run the local Hub-compatible server; check the configured Hub endpoint.", no_args_is_help=True
)


@hub_app.command("serve")
def serve(
    directory: Path = typer.Argument(
        ..., metavar="DIR", help="Folder laid out as DIR/<owner>/<name>/ (README.md card + data files)."
    ),
    host: str = typer.Option(LOOPBACK, help="Interface to bind; loopback by default."),
    port: int = typer.Option(8790, help="TCP port (0 = any free port)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not log each request."),
    no_cache: bool = typer.Option(
        False, "--no-cache", hidden=True, help="Rescan every repo on every request (benchmark baseline)."
    ),
) -> None:
    """Serve dataset repos from DIR as a Hugging Face Hub (API, file downloads, /viewer endpoints).

    Point the real huggingface_hub/datasets clients at it with the printed `export HF_ENDPOINT=...`.
    """
    from pipeline.servers.localhub.server import serve as run

    run(directory, host, port, access_log=not quiet, cache=not no_cache)


@hub_app.command("check")
def check(
    limit: int = typer.Option(5, min=1, help="How many datasets to list."),
    search: str | None = typer.Option(None, help="Only datasets whose id contains this text."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List a few datasets from HF_ENDPOINT (most downloaded first) to prove the Hub and its viewer answer."""
    json_listing(as_json)
    import httpx
    from huggingface_hub import HfApi

    from catalog.hub import hub_errors

    cfg = settings()
    token = cfg.hf_token.get_secret_value() if cfg.hf_token else None
    started = time.perf_counter()
    with hub_errors(cfg.hf_endpoint):
        api = HfApi(endpoint=cfg.hf_endpoint, token=token)
        infos = list(api.list_datasets(search=search, sort="downloads", limit=limit))
    elapsed_ms = (time.perf_counter() - started) * 1000
    print_table(
        ["dataset", "revision", "downloads", "likes", "gated"],
        [(i.id, (i.sha or "")[:12], i.downloads, i.likes, i.gated or "") for i in infos],
        title=f"Hub at {cfg.hf_endpoint}",
    )
    console.print(
        f"[green]reachable:[/] {cfg.hf_endpoint} listed {len(infos)} dataset(s) in {elapsed_ms:.0f} ms", highlight=False
    )
    if not infos:
        console.print(
            "[yellow]no datasets matched[/]"
            + (f" {safe(repr(search))}" if search else ": is the server pointed at the right folder?")
        )
        return
    viewer = f"{cfg.viewer_base}/is-valid"
    try:
        answer = httpx.get(viewer, params={"dataset": infos[0].id}, timeout=5.0)
        state = "ok" if answer.status_code == 200 else f"answered {answer.status_code}"
    except httpx.HTTPError as exc:
        state = f"unreachable ({type(exc).__name__})"
    console.print(f"viewer: {cfg.viewer_base} {state}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(hub_app, name="hub")
