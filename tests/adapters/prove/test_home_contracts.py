"""CI gate: the contract of every adapter in a draftset home, one test per adapter.

    DRAFTSET_CONTRACT_HOME=path/to/home DRAFTSET_CONTRACT_ENDPOINT=https://huggingface.co \\
        .venv/bin/python -m pytest tests/adapters/prove/test_home_contracts.py

Optional: DRAFTSET_CONTRACT_TOKEN (gated data; tests/conftest.py clears HF_TOKEN on purpose),
DRAFTSET_CONTRACT_ROWS (default 500). Skipped when no home is given: the regular suite has none.
The catalog is only read; results are not written back (`draftset adapters test --all` does that).
"""

from __future__ import annotations

import os

import pytest

from adapters.prove.contract import run_contract
from adapters.read.source import iter_raw_rows
from adapters.review import store
from catalog import Catalog

HOME = os.environ.get("DRAFTSET_CONTRACT_HOME")
ENDPOINT = os.environ.get("DRAFTSET_CONTRACT_ENDPOINT", "https://huggingface.co")
TOKEN = os.environ.get("DRAFTSET_CONTRACT_TOKEN") or None
ROWS = int(os.environ.get("DRAFTSET_CONTRACT_ROWS", "500"))
RECORDS = {r.repo_id: r for r in store.list_all(Catalog(HOME))} if HOME else {}


@pytest.mark.skipif(not HOME, reason="set DRAFTSET_CONTRACT_HOME to gate CI on a home's adapters")
@pytest.mark.parametrize("repo_id", sorted(RECORDS) or ["<no adapters>"])
def test_adapter_contract(repo_id):
    assert RECORDS, f"no adapters in {HOME}: nothing to gate (draftset adapters propose OWNER/NAME)"
    spec = RECORDS[repo_id].spec
    result = run_contract(spec, iter_raw_rows(spec, endpoint=ENDPOINT, token=TOKEN, sample=ROWS))
    assert result.passed, "; ".join(f"{c.name}: {c.detail}" for c in result.failures())
