"""Helpers for the service tests: a handle on a running service, and its three users."""

from __future__ import annotations

import time

import httpx

from catalog import Catalog


class Svc:
    def __init__(self, url: str, home, tokens: dict[str, str]):
        self.url, self.home, self.tokens = url, home, tokens

    def api(self, role: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def wait_job(self, job_id: str, timeout_s: float = 120) -> dict:
        deadline = time.monotonic() + timeout_s
        with self.api("viewer") as c:
            while time.monotonic() < deadline:
                job = c.get(f"/api/jobs/{job_id}").json()
                if job["status"] in ("ok", "failed", "interrupted"):
                    return job
                time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish in {timeout_s} s")


def add_users(home) -> dict[str, str]:
    from pipeline.servers.service.users import add_user

    cat = Catalog(home)
    return {
        role: add_user(cat, name, role)
        for name, role in (("vera", "viewer"), ("rita", "reviewer"), ("olga", "operator"))
    }
