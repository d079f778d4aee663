"""`draftset serve` as its own process: the CLI either goes through it or gets the one-line busy error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from service_kit import add_users

from tests.kits.cli import run_draftset

ROOT = Path(__file__).resolve().parents[4]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(hub_url, tmp_path_factory):
    """`draftset serve` in a subprocess on a home with three users; yields (url, home, tokens, cli)."""
    home = tmp_path_factory.mktemp("served-home")
    tokens = add_users(home)
    port = free_port()
    env = {**os.environ, "DRAFTSET_HOME": str(home), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli.app", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        proc.kill()
        raise AssertionError(proc.stdout.read())

    def cli(*args: str, role: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        run_env = dict(env)
        if role:
            run_env.update(DRAFTSET_SERVER=url, DRAFTSET_TOKEN=tokens[role])
        return run_draftset(*args, env=run_env, timeout=timeout)

    yield url, home, tokens, cli, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_without_the_server_the_cli_gets_one_busy_line_at_once(served):
    url, home, _, cli, proc = served
    started = time.monotonic()
    done = cli("sql", "SELECT count(*) FROM users")
    assert time.monotonic() - started < 10  # no 5 s lock retry on top of start-up: the service file says who
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert "catalog is busy: draftset serve" in lines[0] and f"DRAFTSET_SERVER={url}" in done.stderr
    assert cli("sql", "SELECT 1", role=None).returncode == 1
    status = cli("status")  # read-only and useful while the service runs: it names who holds the catalog
    assert "Traceback" not in status.stderr, status.stderr
    said = status.stdout + status.stderr
    assert "a stage is writing" not in said and f"draftset serve (pid {proc.pid}) at {url} holds it" in said
    assert f"export DRAFTSET_SERVER={url} DRAFTSET_TOKEN=<your token>" in said  # the way in, as the busy error says


def test_cli_goes_through_the_service_with_a_token(served):
    url, home, tokens, cli, _ = served
    found = cli("find", "agentic coding", "--samples", "500", "--propose", "1", role="operator")
    assert found.returncode == 0, found.stderr
    assert "adapters proposed:" in found.stdout and url in found.stdout
    assert "plan plan-" in found.stdout and "agents: " in found.stdout  # the plan table, as a local find prints it
    repo = found.stdout.split("adapters proposed:", 1)[1].split()[0].rstrip(";")
    tested = cli("adapters", "test", repo, "--rows", "20", role="reviewer")
    assert tested.returncode == 0 and ": pass" in tested.stdout, tested.stdout + tested.stderr
    approved = cli("adapters", "approve", repo, "--by", "someone-else", role="reviewer")
    assert approved.returncode == 0 and "by rita through" in approved.stdout, approved.stderr
    listed = cli("adapters", "list", role="viewer")  # a read command, through the service that holds the catalog
    assert listed.returncode == 0 and repo in listed.stdout and f"on {url}" in listed.stdout, listed.stderr
    assert "approved" in listed.stdout
    rows = cli("sql", f"SELECT reviewed_by, status FROM adapters WHERE repo_id = '{repo}'", "-f", "csv", role="viewer")
    assert rows.stdout.splitlines() == ["reviewed_by,status", "rita,approved"]
    refused = cli("adapters", "reject", repo, "--note", "no", role="viewer")
    assert refused.returncode == 1 and "this needs the reviewer role; vera is a viewer" in refused.stderr
    added = cli("users", "add", "newbie", "--role", "viewer", role="operator")
    token = added.stdout.strip().splitlines()[-1]
    assert httpx.get(url + "/api/me", headers={"Authorization": f"Bearer {token}"}).json()["name"] == "newbie"
    first = cli("users", "add", "rookie", "--role", "viewer", role="operator").stdout.strip().splitlines()[-1]
    again = cli("users", "add", "rookie", "--role", "reviewer", role="operator")  # would revoke rookie's token
    assert again.returncode == 1 and "exists (role viewer)" in again.stderr and "--replace" in again.stderr
    assert httpx.get(url + "/api/me", headers={"Authorization": f"Bearer {first}"}).json()["role"] == "viewer"
    replaced = cli("users", "add", "rookie", "--role", "reviewer", "--replace", role="operator")
    second = replaced.stdout.strip().splitlines()[-1]
    assert httpx.get(url + "/api/me", headers={"Authorization": f"Bearer {first}"}).status_code == 401
    assert httpx.get(url + "/api/me", headers={"Authorization": f"Bearer {second}"}).json()["role"] == "reviewer"
    no_token = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", "sql", "SELECT 1"],
        cwd=ROOT,
        env={**os.environ, "DRAFTSET_HOME": str(home), "DRAFTSET_SERVER": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert no_token.returncode == 1 and "DRAFTSET_TOKEN is not" in no_token.stderr


def test_tokens_never_reach_the_log_and_stopping_frees_the_catalog(served):
    url, home, tokens, cli, proc = served
    proc.send_signal(signal.SIGINT)
    log = proc.communicate(timeout=30)[0]
    assert "GET /health" in log or "POST /api/" in log  # the access log is on
    assert not any(token in log for token in tokens.values())
    assert not (home / "service.json").exists()
    after = cli("sql", "SELECT name, role FROM users ORDER BY name", "-f", "csv")
    assert after.returncode == 0 and "newbie,viewer" in after.stdout
