"""`draftset serve` (the team service) and `draftset users` (its users, roles and tokens)."""

from __future__ import annotations

from enum import Enum

import typer

from pipeline.cli.as_json import JSON_OPTION, json_listing
from pipeline.cli.common import catalog, console, print_table, settings
from pipeline.servers.http import LOOPBACK

users_app = typer.Typer(help="Users of the team service (draftset serve): roles and tokens.", no_args_is_help=True)


class RoleName(str, Enum):
    viewer = "viewer"
    reviewer = "reviewer"
    operator = "operator"


def serve(
    host: str = typer.Option(LOOPBACK, help="address to listen on (0.0.0.0: every interface)"),
    port: int = typer.Option(8800, help="port to listen on"),
) -> None:
    """Run the team service on this home: HTTP API (/openapi.json), review pages, background jobs.

    It owns the catalog while it runs; the CLI then goes through it (DRAFTSET_SERVER=URL
    DRAFTSET_TOKEN=TOKEN) or says the catalog is busy."""
    from pipeline.servers.service.server import serve as run

    run(settings(), host, port)


@users_app.command("add")
def add(
    name: str = typer.Argument(..., help="user name, e.g. alice"),
    role: RoleName = typer.Option(
        ...,
        "--role",
        help="viewer (read, SQL) | reviewer (also test, approve, reject, map) | operator (also start jobs)",
    ),
    replace: bool = typer.Option(
        False, "--replace", help="re-issue an existing user's token with this role (their old token stops working)"
    ),
) -> None:
    """Create a user (--replace: re-issue an existing one's token); prints the token ONCE: only its hash is stored."""
    from pipeline.servers.service.client import remote
    from pipeline.servers.service.users import add_user

    client = remote()
    token = (
        client.add_user(name, role.value, replace=replace)
        if client
        else add_user(catalog(), name, role.value, replace=replace)
    )
    console.print(f"user {name} ({role.value}); token, shown once, keep it secret:", highlight=False)
    typer.echo(token)


@users_app.command("list")
def list_(as_json: bool = JSON_OPTION) -> None:
    """Users and their roles (tokens are never shown again)."""
    json_listing(as_json)
    from pipeline.servers.service.users import list_users

    served = _users()
    rows = list_users(catalog()) if served is None else served
    print_table(
        ["name", "role", "created", "disabled"],
        [[r["name"], r["role"], r["created_at"], r["disabled_at"] or ""] for r in rows],
    )


def _users() -> list[dict] | None:
    """DRAFTSET_SERVER: the service's users (an operator's call), timestamps as the local catalog gives them."""
    from pipeline.cli.common import timestamp
    from pipeline.servers.service.client import remote

    client = remote()
    if client is None:
        return None
    return [
        {**r, "created_at": timestamp(r["created_at"]), "disabled_at": timestamp(r["disabled_at"])}
        for r in client.users()
    ]


@users_app.command("remove")
def remove(name: str = typer.Argument(...)) -> None:
    """Disable a user: their token stops working (within 2 s on a running service)."""
    from pipeline.servers.service.client import remote
    from pipeline.servers.service.users import remove_user

    if (client := remote()) is not None:
        client.remove_user(name)
        console.print(f"user {name} disabled through {client.url}", highlight=False)
        return
    remove_user(catalog(), name)
    console.print(f"user {name} disabled", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.add_typer(users_app, name="users")
