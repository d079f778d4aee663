"""`make demo`: the whole user journey on the embedded defaults (local fixture Hub, tiny local target).

Every step runs the real `draftset` CLI in a subprocess, exactly as a user would type it, so what
scrolls past is what a user sees. Servers (local Hub, dev target server) run in the background and
are stopped at the end. The demo home is recreated on each run so the output is reproducible.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / "draftset-home" / "demo"
FIXTURE_HUB = ROOT / "tests" / "fixtures" / "hub"
console = Console()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"demo: {url} did not come up within {timeout_s:.0f}s")


def draftset(*args: str, env: dict[str, str], expect_fail: bool = False) -> None:
    """Run one CLI command the way a user would, echoing it first."""
    console.print(f"\n[bold cyan]$ draftset {shlex.join(args)}[/]")
    rc = subprocess.run([sys.executable, "-m", "pipeline.cli.app", *args], env=env, cwd=ROOT).returncode
    if expect_fail and rc == 0:
        raise SystemExit(f"demo: `draftset {shlex.join(args)}` should have failed and did not")
    if not expect_fail and rc != 0:
        raise SystemExit(f"demo: `draftset {shlex.join(args)}` failed (exit {rc})")
    if expect_fail:
        console.print(f"[dim](exit {rc}, as intended: the check caught the planted problem)[/]")


def background(args: list[str], env: dict[str, str], log: Path, stack: ExitStack) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    handle = log.open("w")
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli.app", *args], env=env, cwd=ROOT,
                            stdout=handle, stderr=subprocess.STDOUT)
    stack.callback(handle.close)
    stack.callback(proc.wait)
    stack.callback(proc.terminate)


def main() -> None:
    started = time.monotonic()
    if HOME.exists():
        shutil.rmtree(HOME)
    HOME.mkdir(parents=True)
    hub_port, target_port = free_port(), free_port()
    hub = f"http://127.0.0.1:{hub_port}"
    env = {**os.environ, "DRAFTSET_HOME": str(HOME), "HF_ENDPOINT": hub, "HF_HOME": str(HOME / "hf-cache"),
           "HF_HUB_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("HF_TOKEN", None)
    with ExitStack() as stack:
        console.print(Rule("1. local Hub on the fixture folder"))
        background(["hub", "serve", str(FIXTURE_HUB), "--port", str(hub_port)], env, HOME / "logs" / "hub.log", stack)
        wait_http(f"{hub}/api/datasets?limit=1")
        console.print(f"local Hub at {hub} (log: {HOME / 'logs' / 'hub.log'})")
        for title, steps in journey(env, target_port, stack):
            console.print(Rule(title))
            for step in steps:
                step()
    console.print(Rule(f"demo finished in {time.monotonic() - started:.0f}s; home: {HOME}"))


def journey(env, target_port, stack):
    """(title, [steps]) for each part of the journey; filled in as the stages exist."""
    return []


if __name__ == "__main__":
    main()
