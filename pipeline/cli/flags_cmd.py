"""`draftset adapters flags REPO`: reviewers' per-record flags (adapters.review.flags) — list, add, resolve.

A flag open on the current spec makes the verdict at least `pass with warnings` and blocks approval until it
is resolved with a note (or the approval is forced with a note). With DRAFTSET_SERVER set, every action goes
through the service, as the token's user.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import typer

from catalog.errors import DraftsetError
from pipeline.cli.common import JSON_OPTION, catalog, console, json_output, literal


def _path(repo_id: str) -> str:
    owner, _, name = repo_id.partition("/")
    if not owner or not name:
        raise DraftsetError(f"{repo_id!r} is not a repo id", hint="write it as OWNER/NAME")
    from pipeline.servers.service.client import _repo_path  # each segment quoted, as the client's other routes

    return f"/api/adapters/{_repo_path(repo_id)}"


def flags_cmd(
    repo_id: str = typer.Argument(..., help="dataset repo id (owner/name)"),
    resolve: str | None = typer.Option(None, "--resolve", metavar="ID", help="resolve this flag (needs --note)"),
    add_row: int | None = typer.Option(None, "--add", metavar="ROW", help="flag this raw row (needs --kind)"),
    kind: str | None = typer.Option(None, "--kind", help="with --add: wrong_role|lost_text|bad_tool_call|markup|other"),
    note: str | None = typer.Option(None, "--note", help="with --resolve: what was done; with --add: what is wrong"),
    by: str | None = typer.Option(None, help="reviewer name (default: $USER; through the service: the token's user)"),
    as_json: bool = JSON_OPTION,
) -> None:
    """List the reviewers' flags on an adapter (open / stale / resolved), add one, or resolve one."""
    from pipeline.servers.service.client import remote

    if resolve is not None and add_row is not None:
        raise DraftsetError("--resolve and --add are two actions", hint="run them one at a time")
    client = remote()
    with json_output(as_json) as document:  # under --json every line but the document goes to stderr
        if resolve is not None:
            done = (
                _resolve_remote(client, repo_id, resolve, note)
                if client
                else _resolve_local(repo_id, resolve, note, by)
            )
            console.print(
                literal(f"resolved flag {done['flag_id']} on {repo_id} (row {done['row_index']} {done['kind']})")
            )
        elif add_row is not None:
            if kind is None:
                raise DraftsetError("--add needs --kind", hint="--kind wrong_role|lost_text|bad_tool_call|markup|other")
            done = (
                _add_remote(client, repo_id, add_row, kind, note)
                if client
                else _add_local(repo_id, add_row, kind, note, by)
            )
            console.print(
                literal(f"flagged row {done['row_index']} of {repo_id} as {done['kind']} (flag {done['flag_id']})")
            )
        listed, summary = _remote_listing(client, repo_id) if client else _local_listing(repo_id)
        from pipeline.cli import adapters_view as view

        view.print_flags(listed, repo_id)
        document.update({"repo_id": repo_id, "flags": listed, "verdict": summary["verdict"], "next": summary["next"]})
        console.print(literal(f"verdict: {summary['verdict']['headline']}"))
        console.print(literal(f"next: {summary['next']}"))


def _reviewer(by: str | None) -> str:
    from pipeline.cli.adapters_cmd import _reviewer as reviewer  # the one default: --by, $DRAFTSET_REVIEWER, $USER

    return reviewer(by)


def _local_listing(repo_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from adapters.review import flags, store, verdict

    record = store.require(catalog(), repo_id)
    found = verdict.of_record(record)
    return flags.listed(record.flags, record.spec_hash), {
        "verdict": found.to_json(),
        "next": found.next_step(repo_id, record.status),
    }


def _resolve_local(repo_id: str, flag_id: str, note: str | None, by: str | None) -> dict[str, Any]:
    from adapters.review import flags

    return flags.resolve(catalog(), repo_id, flag_id, _reviewer(by), note or "").model_dump(mode="json")


def _add_local(repo_id: str, row: int, kind: str, note: str | None, by: str | None) -> dict[str, Any]:
    from adapters.review import flags, store

    cat = catalog()
    record = store.require(cat, repo_id)  # the CLI judges the spec it shows: `adapters show/preview` read it
    flag = flags.add(
        cat, repo_id, record.spec_hash, record.revision, row, kind, note, _reviewer(by), current=record.spec_hash
    )
    return flag.model_dump(mode="json")


# -- through the service (DRAFTSET_SERVER): the routes in pipeline/servers/service/api.py ----------------
def _remote_listing(client: Any, repo_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    listed = list(client._call("GET", _path(repo_id) + "/flags"))
    summary = client._call("GET", _path(repo_id), params={"rows": 0})
    return listed, {"verdict": summary["verdict"], "next": summary["next"]}


def _resolve_remote(client: Any, repo_id: str, flag_id: str, note: str | None) -> dict[str, Any]:
    from adapters.review.flags import resolve_hint  # the local refusal's own hint

    if not (note and note.strip()):
        raise DraftsetError("resolving a flag needs --note saying what was done", hint=resolve_hint(repo_id, flag_id))
    url = f"{_path(repo_id)}/flags/{quote(flag_id, safe='')}/resolve"
    return dict(client._call("POST", url, json={"note": note}))


def _add_remote(client: Any, repo_id: str, row: int, kind: str, note: str | None) -> dict[str, Any]:
    spec_hash = client._call("GET", _path(repo_id), params={"rows": 0})["spec_hash"]
    body = {"spec_hash": spec_hash, "row_index": row, "kind": kind, "note": note}
    return dict(client._call("POST", _path(repo_id) + "/flags", json=body))


def register(app: typer.Typer) -> None:
    from pipeline.cli.adapters_cmd import adapters_app

    adapters_app.command("flags")(flags_cmd)
