"""The CI entry point (test_home_contracts.py) run as a separate pytest over a real home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from adapters.infer.infer import propose_adapter
from adapters.review import review, store
from catalog import Catalog

ROOT = Path(__file__).resolve().parents[3]


def _gate(home: Path, hub_url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DRAFTSET_CONTRACT_HOME": str(home), "DRAFTSET_CONTRACT_ENDPOINT": hub_url}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/adapters/prove/test_home_contracts.py"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_ci_gate_fails_on_a_failing_contract_and_passes_when_fixed(hub_url, tmp_path):
    cat = Catalog(tmp_path / "home")
    for repo_id in ("gsm-mini/gsm8k-style", "weird-roles/customer-support-chats"):
        store.save_spec(cat, propose_adapter(repo_id, endpoint=hub_url, viewer_base=hub_url + "/viewer").spec)
    failing = _gate(cat.home, hub_url)
    assert failing.returncode == 1, failing.stdout
    assert "1 failed, 1 passed" in failing.stdout and "'supervisor_note' (7 turns)" in failing.stdout

    # drop, not system: the notes sit mid-conversation, where a system turn fails `system_position`
    review.map_roles(cat, "weird-roles/customer-support-chats", ["supervisor_note=drop"], "ci")
    passing = _gate(cat.home, hub_url)
    assert passing.returncode == 0 and "2 passed" in passing.stdout, passing.stdout
