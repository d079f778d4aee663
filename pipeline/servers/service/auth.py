"""Who is asking, and may they: bearer tokens for the API, cookie sessions for the pages, CSRF for forms.

A session cookie holds a random session id, never the token; the session (user, CSRF secret) lives in
this process's memory, so a restart logs everyone out. Requests authenticated by cookie must carry the
session's CSRF secret on every unsafe method (form field `csrf_token` or header `X-CSRF-Token`); bearer
requests need none (a browser never attaches a bearer header on its own).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from fastapi import Request

from catalog.db import Catalog
from pipeline.servers.service.users import Role, User, user_for_token

SESSION_COOKIE = "draftset_session"
SESSION_TTL_S = 12 * 3600
_CACHE_TTL_S = 2.0  # token → user lookups are cached briefly; `users remove` takes effect within 2 s


class ApiError(Exception):
    """An error answered as JSON {error, next} (or an error page for the HTML routes)."""

    def __init__(self, status: int, error: str, next: str | None = None):
        super().__init__(error)
        self.status, self.error, self.next = status, error, next


@dataclass
class Session:
    user: User
    csrf: str
    expires: float


class Auth:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.sessions: dict[str, Session] = {}
        self._tokens: dict[str, tuple[User | None, float]] = {}
        self._lock = threading.Lock()

    # -- identities ---------------------------------------------------------------------------
    def user_for(self, token: str) -> User | None:
        now = time.monotonic()
        hit = self._tokens.get(token)
        if hit is not None and hit[1] > now:
            return hit[0]
        user = user_for_token(self.catalog, token)
        with self._lock:
            if len(self._tokens) > 1000:
                self._tokens.clear()
            self._tokens[token] = (user, now + _CACHE_TTL_S)
        return user

    def login(self, token: str) -> tuple[str, Session] | None:
        user = self.user_for(token.strip())
        if user is None:
            return None
        sid = secrets.token_urlsafe(32)
        session = Session(user, secrets.token_urlsafe(24), time.time() + SESSION_TTL_S)
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
            user = self.user_for(token.strip()) if scheme.lower() == "bearer" else None
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
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                await self._check_csrf(request, session)
            user = session.user
        if not user.may(role):
            raise ApiError(
                403,
                f"this needs the {role} role; {user.name} is a {user.role}",
                f"ask an operator: draftset users add {user.name} --role {role}",
            )
        return user

    @staticmethod
    async def _check_csrf(request: Request, session: Session) -> None:
        sent: object = request.headers.get("x-csrf-token")
        if sent is None and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            sent = (await request.form()).get("csrf_token")
        if not (isinstance(sent, str) and hmac.compare_digest(sent, session.csrf)):
            raise ApiError(403, "missing or wrong CSRF token", "reload the page and submit the form again")
