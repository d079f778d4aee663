"""Who is asking, and may they: bearer tokens for the API, cookie sessions for the pages, CSRF for forms.

A session cookie holds a random session id, never the token; the session (user, CSRF secret) lives in
this process's memory, so a restart logs everyone out. A session lives exactly as long as the token it
logged in with: every request looks that token's hash up in the same in-memory table a bearer token
meets, so `users remove` and `users add --replace` (a new token and role) end the sessions of the old
token at their next request; a session is never carried over to a later token of the same name (a
leaked token's session would live on through its replacement). Requests authenticated by cookie carry the
session's CSRF secret on every unsafe method (form field `csrf_token` or header `X-CSRF-Token`); bearer
requests need none (a browser never attaches a bearer header on its own).

Authentication never waits behind user queries: the active users are held in memory (token hash ->
user) and reloaded only when the catalog changed (the owner's write generation; every write of the home
goes through this process while it owns it) or, unowned, every 2 s; a reload runs on a thread of its
own limiter, so neither a busy event loop nor busy query slots delay a token check.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

import anyio
import anyio.to_thread
from fastapi import Request

from catalog.db import Catalog
from catalog.owner import owner_of
from pipeline.servers.service.users import TOKEN_PREFIX, Role, User, active_users, hash_token

SESSION_COOKIE = "draftset_session"
SESSION_TTL_S = 12 * 3600
_CACHE_TTL_S = 2.0  # token → user lookups are cached briefly; `users remove` takes effect within 2 s


def same_secret(sent: str, secret: str) -> bool:
    """Constant-time equality of a secret and what a client sent. Compared as bytes: hmac.compare_digest
    raises TypeError on a str with non-ASCII characters, which a client may send (a 500 before)."""
    return hmac.compare_digest(sent.encode("utf-8", "replace"), secret.encode("utf-8", "replace"))


class ApiError(Exception):
    """An error answered as JSON {error, next} (or an error page for the HTML routes)."""

    def __init__(self, status: int, error: str, next: str | None = None, retry_after: int | None = None):
        super().__init__(error)
        self.status, self.error, self.next, self.retry_after = status, error, next, retry_after


@dataclass
class Session:
    user: User
    csrf: str
    expires: float
    token_hash: str  # the token it logged in with: revoked (removed, replaced), the session ends


class Auth:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.sessions: dict[str, Session] = {}
        self._users: dict[str, User] = {}  # token hash -> active user
        self._loaded: tuple[int, float] | None = None  # (owner generation, monotonic time) of the load
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None

    # -- identities ---------------------------------------------------------------------------
    def _fresh(self) -> bool:
        if self._loaded is None:
            return False
        owner = owner_of(self.catalog.path)
        if owner is not None:
            return self._loaded[0] == owner.generation
        return time.monotonic() - self._loaded[1] < _CACHE_TTL_S

    def _reload(self) -> None:
        owner = owner_of(self.catalog.path)
        generation = owner.generation if owner is not None else -1  # read before: a write during the load reloads
        users = active_users(self.catalog)
        with self._lock:
            self._users, self._loaded = users, (generation, time.monotonic())

    def user_for(self, token: str) -> User | None:
        """The active user holding `token` (a blocking reload when stale: for sync callers)."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        if not self._fresh():
            self._reload()
        return self._users.get(hash_token(token))

    async def user_for_async(self, token: str) -> User | None:
        """user_for, with any reload on the auth path's own thread (never on the event loop)."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        await self._refresh()
        return self._users.get(hash_token(token))

    async def _refresh(self) -> None:
        if not self._fresh():
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(1)  # one reload at a time; the others then find it fresh
            await anyio.to_thread.run_sync(self._reload_if_stale, limiter=self._limiter)

    async def session_user(self, request: Request, session: Session) -> User | None:
        """The session's user while the token it logged in with is active, or None once that token is
        revoked (the user removed, or given a new token): then the session ends here, at once."""
        await self._refresh()
        user = self._users.get(session.token_hash)
        if user is None:
            self.logout(request.cookies.get(SESSION_COOKIE))
        return user

    def _reload_if_stale(self) -> None:
        if not self._fresh():
            self._reload()

    def login(self, token: str) -> tuple[str, Session] | None:
        token = token.strip()
        user = self.user_for(token)
        if user is None:
            return None
        sid = secrets.token_urlsafe(32)
        session = Session(user, secrets.token_urlsafe(24), time.time() + SESSION_TTL_S, hash_token(token))
        with self._lock:
            self.sessions = {k: s for k, s in self.sessions.items() if s.expires > time.time()}
            self.sessions[sid] = session
        return sid, session

    def logout(self, sid: str | None) -> None:
        with self._lock:
            self.sessions.pop(sid or "", None)

    def session(self, request: Request) -> Session | None:
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE) or "")
        return session if session is not None and session.expires > time.time() else None

    # -- the check every route makes -------------------------------------------------------------
    async def require(self, request: Request, role: Role) -> User:
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            user = await self.user_for_async(token.strip()) if scheme.lower() == "bearer" else None
            if user is None:
                raise ApiError(
                    401, "invalid or revoked token", "ask an operator for a token: draftset users add NAME --role ROLE"
                )
        else:
            session = self.session(request)
            if session is None:
                raise ApiError(
                    401, "not logged in", "send Authorization: Bearer TOKEN, or log in at /login with your token"
                )
            current = await self.session_user(request, session)
            if current is None:
                raise ApiError(
                    401,
                    f"{session.user.name}'s access was removed, or their token replaced",
                    "log in at /login with your current token (an operator issues one)",
                )
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                await self._check_csrf(request, session)
            user = current
        if not user.may(role):
            raise ApiError(
                403,
                f"this needs the {role} role; {user.name} is a {user.role}",
                f"ask an operator for the {role} role (`draftset users add {user.name} --role {role} --replace` "
                "issues you a new token)",
            )
        return user

    @staticmethod
    async def _check_csrf(request: Request, session: Session) -> None:
        sent: object = request.headers.get("x-csrf-token")
        if sent is None and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            sent = (await request.form()).get("csrf_token")
        if not (isinstance(sent, str) and same_secret(sent, session.csrf)):
            raise ApiError(403, "missing or wrong CSRF token", "reload the page and submit the form again")
