"""`draftset hub serve|check` through the real console script (subprocesses)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from huggingface_hub import HfApi

from pipeline.servers.localhub import free_port

DRAFTSET = str(Path(sys.executable).parent / "draftset")


def run(*args: str, endpoint: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    if endpoint:
        env.update(HF_ENDPOINT=endpoint, DRAFTSET_VIEWER_URL=endpoint + "/viewer")
    return subprocess.run([DRAFTSET, *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_check_against_a_dead_endpoint_is_one_clear_line():
    endpoint = f"http://127.0.0.1:{free_port()}"
    result = run("hub", "check", endpoint=endpoint, timeout=20)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: cannot reach the Hub at {endpoint}")
    assert lines[1].startswith("next:") and "draftset hub serve tests/fixtures/hub" in lines[1]
    assert len(lines) == 2 and "Traceback" not in result.stderr + result.stdout


def test_check_lists_most_downloaded_first(mini_url):
    result = run("hub", "check", "--limit", "2", endpoint=mini_url)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("beta/qa-csv") < out.index("acme/chat-parquet")
    assert "listed 2 dataset(s)" in out and "viewer:" in out and " ok" in out


def test_serve_prints_the_endpoint_and_serves(mini_root):
    proc = subprocess.Popen(
        [DRAFTSET, "hub", "serve", str(mini_root), "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
    )
    try:
        endpoint = None
        for line in proc.stdout:
            if "export HF_ENDPOINT=" in line:
                endpoint = line.split("=", 1)[1].strip()
                break
        assert endpoint and endpoint.startswith("http://127.0.0.1:")
        assert "beta/qa-csv" in [d.id for d in HfApi(endpoint=endpoint, token=False).list_datasets()]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_refuses_a_busy_port_and_a_missing_folder(mini_root, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = run("hub", "serve", str(mini_root), "--port", str(busy.getsockname()[1]))
    assert result.returncode == 1 and "cannot listen on 127.0.0.1" in result.stderr
    assert "Traceback" not in result.stderr
    missing = run("hub", "serve", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
