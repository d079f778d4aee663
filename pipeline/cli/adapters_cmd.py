"""`draftset adapters ...`: propose, review, test, approve/reject, edit and map dataset adapters."""

from __future__ import annotations

import getpass
import os
import shlex
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import Progress

from catalog.errors import DraftsetError
from catalog.io import write_text_atomic
from catalog.names import require_known
from catalog.untrusted import shell_word
from pipeline.cli.common import JSON_OPTION, catalog, console, json_listing, json_output, literal, safe, settings

if TYPE_CHECKING:
    from adapters.review import store
    from adapters.review.propose import Outcome

# The adapters package (huggingface_hub, pyarrow, the view) is imported inside each command so that
# `draftset --help` stays fast.

REPO = typer.Argument(..., help="dataset repo id (owner/name)")
adapters_app = typer.Typer(help="Infer, contract-test and approve declarative dataset adapters.", no_args_is_help=True)


def _token() -> str | None:
    token = settings().hf_token
    return token.get_secret_value() if token else None


def _llm(policy: str) -> tuple[Any, str] | None:
    """(openai client, model) for `--policy llm`, from DRAFTSET_LLM_*; None for the heuristic policy."""
    if policy == "heuristic":
        return None
    require_known("policy", policy, ("heuristic", "llm"), where="--policy", hint="--policy heuristic (default) or llm")
    cfg = settings()
    if not (cfg.llm_base_url and cfg.llm_model):
        raise DraftsetError(
            "--policy llm needs a model endpoint",
            hint="set DRAFTSET_LLM_BASE_URL and DRAFTSET_LLM_MODEL (an OpenAI-compatible server)",
        )
    import openai

    key = cfg.llm_api_key.get_secret_value() if cfg.llm_api_key else "none"
    return openai.OpenAI(base_url=cfg.llm_base_url, api_key=key, max_retries=1, timeout=60), cfg.llm_model


def _words(repo_ids: list[str]) -> str:
    return " ".join(shell_word(r) for r in repo_ids)


def propose_many(
    targets: list[str],
    rows: int = 500,
    category: str | None = None,
    policy: str = "heuristic",
    on_outcome: Callable[[Outcome], None] | None = None,
) -> bool:
    """Propose and contract-test each target (adapters.review.propose); print the table, each problem and a summary
    line. True when every target got a passing contract. `on_outcome`: called as each target ends."""
    from adapters.review import propose as proposing
    from adapters.review import verdict
    from pipeline.cli import adapters_view as view

    cat, cfg = catalog(), settings()
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("proposing", total=len(targets))

        def tick(repo_id: str) -> None:
            progress.update(task, description=f"proposing {safe(repo_id)}", completed=targets.index(repo_id))

        outcomes = proposing.propose_many(
            cat,
            targets,
            endpoint=cfg.hf_endpoint,
            viewer_base=cfg.viewer_base,
            token=_token(),
            rows=rows,
            category=category,
            llm=_llm(policy),
            progress=tick,
            on_outcome=on_outcome,
        )
    records = [o.record for o in outcomes if o.record is not None]
    if records:
        view.print_list(records)
    for o in outcomes:
        if not o.ok:
            console.print(literal(o.line(), style="red" if o.error or o.contract else "yellow"))
    console.print(literal(proposing.summary_line(outcomes)))
    found = {r.repo_id: verdict.of_record(r) for r in records}
    ready = [repo for repo, v in found.items() if v.approvable]
    review_first = [repo for repo, v in found.items() if v.passed and not v.approvable]
    broken = [repo for repo, v in found.items() if not v.passed]
    if ready:  # repo ids from the Hub or an LLM: each shell-quoted, so a pasted one is one word
        console.print(literal(f"next: draftset adapters show REPO, then approve it (ready: {_words(ready)})"))
    if review_first:
        console.print(
            literal(f"next: check the open REVIEW items in draftset adapters show REPO ({_words(review_first)})")
        )
    if broken:
        console.print(literal(f"next: fix with draftset adapters map/edit REPO, or reject ({_words(broken)})"))
    return all(o.ok for o in outcomes)


@adapters_app.command("propose")
def propose(
    repos: list[str] = typer.Argument(None, help="dataset repo ids (owner/name)"),
    all_top: int = typer.Option(0, "--all-top", help="also propose for the N best-ranked find candidates"),
    rows: int = typer.Option(500, help="rows sampled across all files for the contract"),
    category: str | None = typer.Option(None, help="category (default: from the find ranking)"),
    policy: str = typer.Option(
        "heuristic",
        help="heuristic, or llm: when structure cannot decide, a model "
        "(DRAFTSET_LLM_*) proposes the reading; the contract decides",
    ),
) -> None:
    """Infer an adapter (pinned revision, layout, paths, role map, mode) and run its contract."""
    from pipeline.cli import known
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # DRAFTSET_SERVER: the service owns the catalog and proposes
        if policy != "heuristic" or all_top:
            raise DraftsetError(
                "through the service, propose takes repo ids and runs the heuristic policy",
                hint="drop --policy/--all-top (the service proposes a plan's top datasets in a find job)",
            )
        if not repos:
            raise DraftsetError("nothing to propose", hint="name a dataset: draftset adapters propose OWNER/NAME")
        if not _propose_remote(client, list(repos), rows, category):
            raise typer.Exit(1)
        return
    if category is not None:
        require_known("category", category, known.categories(), where="--category", hint="leave it out to take find's")
    _llm(policy)  # an unknown policy is refused before anything is fetched
    targets = list(repos or [])
    if all_top:
        targets += [
            r["repo_id"]
            for r in catalog().query(
                "SELECT repo_id FROM candidates WHERE coalesce(status, '') <> 'irrelevant' "
                "ORDER BY score DESC NULLS LAST LIMIT ?",
                [all_top],
            )
            if r["repo_id"] not in targets
        ]
    if not targets:
        raise DraftsetError(
            "nothing to propose",
            hint="name a dataset (draftset adapters propose OWNER/NAME) or use --all-top N after `draftset find`",
        )
    if not propose_many(targets, rows, category, policy):
        raise typer.Exit(1)  # a failing contract, a refusal or an error: scripts must not go on to ingest


def _propose_remote(client: Any, targets: list[str], rows: int, category: str | None) -> bool:
    """Each target proposed by the service (a job per dataset), printed as the local command prints it."""
    from pipeline.cli import adapters_view as view

    done = [client.propose(repo, rows, category)["result"] for repo in dict.fromkeys(targets)]
    stored = [d["adapter"] for d in done if d["adapter"] is not None]
    if stored:
        view.print_remote_list(stored, client.url)
    for d in done:
        console.print(literal(d["line"]), style="" if d["ok"] else "red")
    ok = sum(d["ok"] for d in done)
    console.print(literal(f"{len(done)} dataset(s) through {client.url}: {ok} contract pass, {len(done) - ok} not"))
    return ok == len(done)


@adapters_app.command("list")
def list_(as_json: bool = JSON_OPTION) -> None:
    """Every adapter with its status (proposed/approved/rejected/stale) and contract result."""
    with json_output(as_json):
        _list()


def _list() -> None:
    from adapters.review import store
    from pipeline.cli import adapters_view as view
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # DRAFTSET_SERVER: the service holds the catalog
        view.print_remote_list(client.adapters(), client.url)
        return
    records = store.list_all(catalog())
    if not records:
        console.print("no adapters yet: draftset adapters propose OWNER/NAME")
        return
    view.print_list(records)


def _verdict_document(record: store.AdapterRecord) -> dict[str, Any]:
    """What a script reads of an adapter: full ids and hashes, the one verdict object the API and the page
    give (adapters/review/verdict.py), and the next command."""
    from adapters.review import verdict

    found = verdict.of_record(record)
    return {
        "repo_id": record.repo_id,
        "revision": record.revision,
        "spec_hash": record.spec_hash,
        "status": record.status,
        "verdict": found.to_json(),
        "next": found.next_step(record.repo_id, record.status),
    }


@adapters_app.command("show")
def show(repo_id: str = REPO, as_json: bool = JSON_OPTION) -> None:
    """Spec, reasons, role counts, contract result and three raw → canonical examples."""
    from adapters.review import store
    from pipeline.cli import adapters_view as view
    from pipeline.servers.service.client import remote

    document = json_listing(as_json)
    if (client := remote()) is not None:  # DRAFTSET_SERVER: the stored record comes from the service
        record = store.AdapterRecord.model_validate(client.adapter_record(repo_id))
    else:
        record = store.require(catalog(), repo_id)
    if as_json:  # the whole stored record (spec, contract, review, flags) beside the verdict
        document.update(_verdict_document(record) | {"record": record.model_dump(mode="json")})
        return
    view.print_show(record)


@adapters_app.command("preview")
def preview(
    repo_id: str = REPO,
    row: int = typer.Option(0, "--row", help="row index (file order, as ingest counts)"),
    canonical_only: bool = typer.Option(False, "--canonical-only", help="print only the canonical record"),
    as_json: bool = JSON_OPTION,
) -> None:
    """One raw row and what the current spec makes of it (the canonical record, or the row's error)."""
    from adapters.read.source import RawRow
    from adapters.review import store
    from adapters.review.preview import canonical_of, read_row
    from pipeline.cli import adapters_view as view
    from pipeline.servers.service.client import remote

    document = json_listing(as_json)
    canonical: Any = None
    if (client := remote()) is not None:  # the service reads the row from its Hub with its own token
        found = client.adapter_row(repo_id, row)
        record = store.AdapterRecord.model_validate(found["record"])
        raw, canonical = RawRow(**found["raw"]), found["canonical"]
    else:
        record = store.require(catalog(), repo_id)
        raw = read_row(record.spec, row, endpoint=settings().hf_endpoint, token=_token())
    if as_json:  # the raw row as read and its canonical records (or {"rejected"} / {"malformed"}), untruncated
        made = canonical_of(record.spec, raw) if canonical is None else canonical
        document.update(_verdict_document(record) | {"row": raw.row_index, "raw": raw.row, "canonical": made})
        return
    view.print_preview(record, raw, canonical_only, canonical=canonical)


@adapters_app.command("test")
def test(
    repos: list[str] = typer.Argument(None, help="repo ids (default with --all: every adapter)"),
    all_: bool = typer.Option(False, "--all", help="test every adapter in the catalog (for CI)"),
    rows: int = typer.Option(500, help="rows sampled across all files"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the contract; exits 1 when any contract fails. Results go to adapters.prove.contract."""
    from adapters.review import review, store
    from pipeline.cli import adapters_view as view
    from pipeline.servers.service.client import remote

    with json_output(as_json) as document:  # under --json: {"adapters": [verdict document + contract]}
        tested: list[dict[str, Any]] = document.setdefault("adapters", [])
        if (client := remote()) is not None:  # DRAFTSET_SERVER: the service runs the contract
            named = list(repos or []) + ([s["repo_id"] for s in client.adapters()] if all_ else [])
            if not named:
                raise DraftsetError("nothing to test", hint="draftset adapters test OWNER/NAME, or --all")
            failed = []
            for repo in dict.fromkeys(named):
                if not _print_remote_test(client.test(repo, rows)):
                    failed.append(repo)
                record = store.AdapterRecord.model_validate(client.adapter_record(repo))
                _print_approval(_verdict_document(record))
                tested.append(_verdict_document(record) | {"contract": record.contract})
            if failed:
                console.print(f"[red]contract failed:[/] {', '.join(failed)}", highlight=False)
                raise typer.Exit(1)
            return
        cat, cfg = catalog(), settings()
        targets = list(repos or []) + ([r.repo_id for r in store.list_all(cat)] if all_ else [])
        if not targets:
            raise DraftsetError("nothing to test", hint="draftset adapters test OWNER/NAME, or --all")
        failed = []
        for repo_id in dict.fromkeys(targets):
            with console.status(f"contract of {safe(repo_id)} on {rows} sampled rows"):
                saved, result = review.check_adapter(cat, repo_id, endpoint=cfg.hf_endpoint, token=_token(), rows=rows)
            view.print_contract(result, repo_id)
            _print_approval(_verdict_document(saved))
            tested.append(_verdict_document(saved) | {"contract": saved.contract})
            if not result.passed:
                failed.append(repo_id)
        if failed:
            console.print(f"[red]contract failed:[/] {safe(', '.join(failed))}", highlight=False)
            raise typer.Exit(1)


def _print_approval(document: dict[str, Any]) -> None:
    """After a contract: the verdict with what still blocks an approval (open REVIEW items, flags), so a
    passing contract is never read as "ready" when `approve` would refuse it."""
    from pipeline.cli.adapters_view import approval_cell

    found = document["verdict"]
    console.print(literal(f"verdict: {found['headline']} · approval: {approval_cell(found, document['status'])}"))
    for blocker in found["blockers"]:
        console.print(literal(f"  {blocker}"), style="yellow" if blocker.startswith(("REVIEW", "flag ")) else "red")
    console.print(literal(f"next: {document['next']}"))


def _print_remote_test(job: dict) -> bool:
    from pipeline.cli import adapters_view as view

    result = job["result"]
    view.print_contract(result["contract"], result["repo_id"])
    return bool(result["passed"])


def _reviewer(by: str | None) -> str:
    return by or os.environ.get("DRAFTSET_REVIEWER") or getpass.getuser()


@adapters_app.command("approve")
def approve(
    repo_id: str = REPO,
    by: str | None = typer.Option(None, help="reviewer name (default: $USER)"),
    note: str | None = typer.Option(None, help="why (required with --force)"),
    force: bool = typer.Option(
        False, help="approve although the contract fails or a REVIEW item is open (needs --note)"
    ),
    checked: list[str] | None = typer.Option(
        None, "--checked", help="an open REVIEW item (e.g. source.split) you have checked (repeatable)"
    ),
) -> None:
    """Approve the current spec at the current revision (refused when the contract fails or a REVIEW item is open)."""
    from adapters.review import review
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # the service records the token's user, not --by
        done = client.approve(repo_id, note, force, checked)
        console.print(
            f"approved {repo_id} (spec {done['spec_hash'][:12]}, revision {done['revision'][:12]}) "
            f"by {done['reviewed_by']} through {client.url}",
            highlight=False,
        )
        return
    if checked:
        review.mark_checked(catalog(), repo_id, list(dict.fromkeys(checked)), _reviewer(by))
    record = review.approve(catalog(), repo_id, _reviewer(by), note, force)
    console.print(
        safe(
            f"approved {repo_id} (spec {record.spec_hash[:12]}, revision {record.revision[:12]}) "
            f"by {record.reviewed_by}"
        ),
        highlight=False,
    )


@adapters_app.command("reject")
def reject(
    repo_id: str = REPO,
    note: str = typer.Option(..., help="why it is rejected"),
    by: str | None = typer.Option(None, help="reviewer name (default: $USER)"),
) -> None:
    """Reject an adapter; ingestion refuses it."""
    from adapters.review import review
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:
        client.reject(repo_id, note)
        console.print(f"rejected {repo_id} through {client.url}", highlight=False)
        return
    review.reject(catalog(), repo_id, _reviewer(by), note)
    console.print(f"rejected {safe(repo_id)}", highlight=False)


@adapters_app.command("map")
def map_roles(
    repo_id: str = REPO,
    assignments: list[str] = typer.Argument(..., help="LABEL=ROLE, ROLE in system|user|assistant|tool|drop"),
    by: str | None = typer.Option(None, help="reviewer name (default: $USER)"),
) -> None:
    """Set role-map entries without an editor, e.g. `map weird/chats supervisor_note=system`."""
    from adapters.review import review
    from pipeline.servers.service.client import remote

    if (client := remote()) is not None:  # the service records the token's user, not --by
        done = client.map_roles(repo_id, _assignments(assignments))
        console.print(
            safe(
                f"{repo_id}: role map now {done['role_map']}; status {done['status']}; "
                f"next: draftset adapters test {shell_word(repo_id)}"
            ),
            highlight=False,
        )
        return
    record = review.map_roles(catalog(), repo_id, assignments, _reviewer(by))
    console.print(
        safe(
            f"{repo_id}: role map now {record.spec.role_map}; status {record.status}; "
            f"next: draftset adapters test {shell_word(repo_id)}"
        ),
        highlight=False,
    )


def _assignments(pairs: list[str]) -> dict[str, str]:
    """LABEL=ROLE pairs as the service's map body, refused here as locally when one does not read."""
    from adapters.review.review import parse_assignment

    return dict(parse_assignment(pair) for pair in pairs)


@adapters_app.command("edit")
def edit(repo_id: str = REPO) -> None:
    """Edit the spec YAML in $EDITOR; re-validated on save (a changed spec makes an approval stale)."""
    from adapters.review import review, store

    cat = catalog()
    record = store.require(cat, repo_id)
    path = store.yaml_path(cat.home, repo_id)
    if not path.exists():
        write_text_atomic(path, record.spec.to_yaml())
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    if subprocess.call([*shlex.split(editor), str(path)]) != 0:
        raise DraftsetError(
            f"editor {editor!r} exited with an error; the spec was not changed",
            hint=f"your edits are kept in {path}; run `draftset adapters edit {shell_word(repo_id)}` again",
        )
    try:
        updated = review.accept_edit(cat, repo_id, path.read_text(encoding="utf-8"))
    except DraftsetError as exc:
        exc.hint = (
            f"your edits are kept in {path}; fix them and run `draftset adapters edit {shell_word(repo_id)}` again"
        )
        raise
    changed = updated.spec_hash != record.spec_hash
    console.print(
        safe(
            f"{repo_id}: {'spec changed' if changed else 'no change'}; status {updated.status}"
            + (f"; next: draftset adapters test {shell_word(repo_id)}" if changed else "")
        ),
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(adapters_app, name="adapters")
