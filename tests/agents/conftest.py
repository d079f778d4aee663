"""Fixtures for the find tests: one shared "agentic coding" run over the fixture Hub (module scope),
and an env factory pointing agents at the local Hub with a fresh DRAFTSET_HOME."""

from __future__ import annotations

import asyncio

import pytest

from agents.configuration import FindConfig
from agents.run import FindRequest, run_find
from catalog import Catalog
from tests.kits.find import make_env


@pytest.fixture(scope="module")
def agentic_run(hub_url, tmp_path_factory):
    """One `find "agentic coding" --samples 100000` over the fixture Hub: (env, final event, catalog)."""
    home = tmp_path_factory.mktemp("find-home")
    env = make_env(hub_url, home)
    final = asyncio.run(run_find(env, FindRequest("agentic coding", 100_000, FindConfig())))
    return env, final, Catalog(home)
