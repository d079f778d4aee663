"""Service users and roles: a token is shown once at creation, only its sha256 is stored.

Tokens are 32 random bytes, so a plain (unsalted) sha256 is enough to make the stored hash useless to
whoever reads the catalog, and lets a request find its user with one indexed lookup.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from catalog.db import Catalog
from catalog.errors import DraftsetError, NotFound

Role = Literal["viewer", "reviewer", "operator"]
ROLES: tuple[Role, ...] = ("viewer", "reviewer", "operator")  # each role may do what the ones before it may
TOKEN_PREFIX = "dst_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


@dataclass(frozen=True)
class User:
    name: str
    role: Role

    def may(self, needed: Role) -> bool:
        return ROLES.index(self.role) >= ROLES.index(needed)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def add_user(catalog: Catalog, name: str, role: str, *, replace: bool = False) -> str:
    """Create a user, or (`replace`) re-issue an active user's token and role; returns the token, which is
    stored nowhere. Re-adding an active user without `replace` is refused: it would silently revoke the token
    that user works with. A removed user may be added again."""
    if not _NAME.match(name or ""):
        raise DraftsetError(
            f"invalid user name {name!r}", hint="use letters, digits and . _ @ - (at most 64 characters), e.g. alice"
        )
    if role not in ROLES:
        raise DraftsetError(f"unknown role {role!r}", hint=f"use one of {', '.join(ROLES)}")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with catalog.writer() as con:
        active = con.execute("SELECT role FROM users WHERE name = ? AND disabled_at IS NULL", [name]).fetchall()
        if active and not replace:
            raise DraftsetError(
                f"user {name!r} exists (role {active[0][0]}); adding again would revoke their token",
                hint=f"to issue a new token (and role): draftset users add {name} --role {role} --replace",
            )
        con.execute("DELETE FROM users WHERE name = ?", [name])
        con.execute(
            "INSERT INTO users (name, role, token_hash, created_at) VALUES (?, ?, ?, ?)",
            [name, role, hash_token(token), datetime.now()],
        )
    return token


def remove_user(catalog: Catalog, name: str) -> None:
    with catalog.writer() as con:
        found = con.execute(
            "UPDATE users SET disabled_at = ? WHERE name = ? AND disabled_at IS NULL RETURNING name",
            [datetime.now(), name],
        ).fetchall()
    if not found:
        raise NotFound(f"no active user {name!r}", hint="draftset users list")


def list_users(catalog: Catalog) -> list[dict]:
    if not catalog.path.exists():
        return []
    return catalog.query("SELECT name, role, created_at, disabled_at FROM users ORDER BY name")


def active_users(catalog: Catalog) -> dict[str, User]:
    """Every active user by token hash (the service's authentication table, held in memory)."""
    with catalog.reader() as con:  # not a query slot: authentication never waits behind user reads
        rows = con.execute("SELECT token_hash, name, role FROM users WHERE disabled_at IS NULL").fetchall()
    return {token_hash: User(name, role) for token_hash, name, role in rows}


def user_for_token(catalog: Catalog, token: str) -> User | None:
    """The active user holding `token`, else None (compared by hash: the token never meets the database)."""
    if not token or not token.startswith(TOKEN_PREFIX):
        return None
    rows = catalog.query(
        "SELECT name, role FROM users WHERE token_hash = ? AND disabled_at IS NULL", [hash_token(token)]
    )
    return User(rows[0]["name"], rows[0]["role"]) if rows else None
