"""The CLI's way through a running service: DRAFTSET_SERVER=URL and DRAFTSET_TOKEN=TOKEN.

While `draftset serve` owns the catalog, every read command (`sql`, `status`, `adapters list/show/preview`,
`users list`), `find`, `ingest`, `adapters test/approve/reject/map` and `users add/remove` send their work
here instead of opening the file; the rest are local-only and say so (pipeline/cli/team.py). Every call
has a timeout (never a hang); the service's {error, next} comes back as the CLI's usual one-line error.
The token travels in the Authorization header only: never in a URL, so never in an access log.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from catalog.errors import DraftsetError

TIMEOUT = httpx.Timeout(30.0, connect=5.0)
MAX_ROWS = 100_000  # the API's per-request cap
SQL_TIMEOUT_S = 90.0  # over any statement time limit the service sets (Settings.sql_timeout_staff_s: 30 s)


class _Rows:
    def __init__(self, rows: list[tuple[Any, ...]]):
        self._rows = iter(rows)

    def fetchmany(self, n: int) -> list[tuple[Any, ...]]:
        return list(itertools.islice(self._rows, n))


class Client:
    def __init__(self, url: str, token: str):
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, timeout=TIMEOUT, headers={"Authorization": f"Bearer {token}"})

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            resp = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise DraftsetError(
                f"cannot reach the draftset service at {self.url}: {type(exc).__name__}",
                hint="check DRAFTSET_SERVER (is `draftset serve` running there?)",
            ) from exc
        if resp.status_code >= 400:
            try:
                body = resp.json()
                raise DraftsetError(f"service: {body['error']}", hint=body.get("next"))
            except (ValueError, KeyError, TypeError):
                raise DraftsetError(f"service answered HTTP {resp.status_code}", hint="see the service's log") from None
        return resp.json()

    # -- the commands ------------------------------------------------------------------------------
    def sql(self, query: str, limit: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        # The service bounds the statement (408 at its time limit); the client waits a little longer than that.
        data = self._call(
            "POST",
            "/api/sql",
            json={"query": query, "limit": min(limit or MAX_ROWS, MAX_ROWS)},
            timeout=httpx.Timeout(SQL_TIMEOUT_S, connect=5.0),
        )
        return data["columns"], [tuple(r) for r in data["rows"]]

    @contextmanager
    def open_query(self, query: str, limit: int | None) -> Iterator[tuple[list[str], _Rows | None]]:
        """catalog.sql.open_query's shape (columns, something with fetchmany), answered by the service."""
        columns, rows = self.sql(query, limit)
        yield columns, (_Rows(rows) if columns else None)

    def approve(self, repo_id: str, note: str | None, force: bool, checked: list[str] | None = None) -> dict[str, Any]:
        body = {"note": note, "force": force, "checked": list(checked or [])}
        return self._call("POST", f"/api/adapters/{repo_id}/approve", json=body)

    def adapters(self) -> list[dict[str, Any]]:
        """Every adapter's summary (repo, status, verdict...), as `GET /api/adapters` gives it."""
        return list(self._call("GET", "/api/adapters"))

    def reject(self, repo_id: str, note: str) -> dict[str, Any]:
        return self._call("POST", f"/api/adapters/{repo_id}/reject", json={"note": note})

    def propose(self, repo_id: str, rows: int, category: str | None, timeout_s: float = 900) -> dict[str, Any]:
        body = {"rows": rows, "category": category}
        job = self._call("POST", f"/api/adapters/{_repo_path(repo_id)}/propose", json=body)
        return self.wait(job["job_id"], timeout_s)

    def test(self, repo_id: str, rows: int, timeout_s: float = 600) -> dict[str, Any]:
        job = self._call("POST", f"/api/adapters/{repo_id}/test", json={"rows": rows})
        return self.wait(job["job_id"], timeout_s)

    def find(
        self,
        domain: str,
        samples: int,
        policy: str,
        propose: int,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        timeout_s: float = 3600,
    ) -> dict[str, Any]:
        job = self._call(
            "POST", "/api/find", json={"domain": domain, "samples": samples, "policy": policy, "propose": propose}
        )
        for event in self.events(job["job_id"], timeout_s):
            if on_event is not None:
                on_event(event)
        return self.wait(job["job_id"], 30)

    def add_user(self, name: str, role: str, *, replace: bool = False) -> str:
        return self._call("POST", "/api/users", json={"name": name, "role": role, "replace": replace})["token"]

    # -- team mode: the read commands and ingest (api.py's "team mode" block) -------------------------
    def adapter_record(self, repo_id: str) -> dict[str, Any]:
        """The stored adapter record (spec, contract, review), as `adapters show` prints it locally."""
        return self._call("GET", "/api/adapters/record", params={"repo": repo_id})

    def adapter_row(self, repo_id: str, row: int) -> dict[str, Any]:
        """One raw row as the service reads it from the Hub, with what the current spec makes of it."""
        return self._call("GET", "/api/adapters/row", params={"repo": repo_id, "row": row}, timeout=_LONG)

    def map_roles(self, repo_id: str, assignments: dict[str, str]) -> dict[str, Any]:
        return self._call("POST", f"/api/adapters/{_repo_path(repo_id)}/map", json=assignments)

    def status(self, limit: int) -> dict[str, Any]:
        """The service home's regeneration jobs, recent stage runs and who holds its catalog."""
        return self._call("GET", "/api/status", params={"limit": limit})

    def users(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/api/users"))

    def remove_user(self, name: str) -> dict[str, Any]:
        return self._call("DELETE", f"/api/users/{quote(name, safe='')}")

    def ingest(
        self,
        body: dict[str, Any],
        on_event: Callable[[dict[str, Any]], None] | None = None,
        timeout_s: float = 24 * 3600,
    ) -> dict[str, Any]:
        """Start an ingest job, follow its progress, and return the finished job, failed or not: a failed
        ingest still carries every dataset's counts, which the CLI prints before the error."""
        job = self._call("POST", "/api/ingest", json=body)
        for event in self.events(job["job_id"], timeout_s):
            if on_event is not None:
                on_event(event)
        return self.wait(job["job_id"], 60, check=False)

    # -- jobs ----------------------------------------------------------------------------------------
    def events(self, job_id: str, timeout_s: float) -> Iterator[dict[str, Any]]:
        """The job's progress events (server-sent) until it ends."""
        deadline = time.monotonic() + timeout_s
        try:
            with self._http.stream(
                "GET", f"/api/jobs/{job_id}/events", timeout=httpx.Timeout(timeout_s, connect=5.0, read=60.0)
            ) as resp:
                kind = "message"
                for line in resp.iter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        if kind == "end":
                            return
                        yield json.loads(line[5:])
                    if time.monotonic() > deadline:
                        return
        except httpx.HTTPError as exc:
            raise DraftsetError(
                f"lost the job's progress stream from {self.url}: {type(exc).__name__}",
                hint=f"the job goes on in the service: GET {self.url}/api/jobs/{job_id}",
            ) from exc

    def wait(self, job_id: str, timeout_s: float, check: bool = True) -> dict[str, Any]:
        """The finished job; unless `check` is off, one that did not end `ok` is raised as its error."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self._call("GET", f"/api/jobs/{job_id}")
            if job["status"] in ("ok", "failed", "interrupted"):
                if check and job["status"] != "ok":
                    raise DraftsetError(
                        f"service job {job_id} {job['status']}: {job.get('error')}", hint=job.get("next")
                    )
                return job
            if time.monotonic() > deadline:
                raise DraftsetError(
                    f"service job {job_id} still running after {timeout_s:.0f} s",
                    hint=f"it goes on in the service: GET {self.url}/api/jobs/{job_id}",
                )
            time.sleep(0.2)


_LONG = httpx.Timeout(300.0, connect=5.0)  # a request that reads from the Hub on the service's side


def _repo_path(repo_id: str) -> str:
    """owner/name as two path segments, each quoted: a typo with `?` or `#` stays inside its segment."""
    owner, _, name = repo_id.partition("/")
    return f"{quote(owner, safe='')}/{quote(name, safe='')}"


def remote() -> Client | None:
    """A client when DRAFTSET_SERVER is set (then DRAFTSET_TOKEN must be too), else None."""
    from pipeline.settings import settings

    s = settings()
    if not s.server_url:
        return None
    if s.server_token is None:
        raise DraftsetError(
            f"DRAFTSET_SERVER is set ({s.server_url}) but DRAFTSET_TOKEN is not",
            hint="export DRAFTSET_TOKEN=<the token `draftset users add` printed for you>",
        )
    return Client(s.server_url, s.server_token.get_secret_value())
