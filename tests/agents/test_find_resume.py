"""find runs that died or half-failed: --resume re-records a run whose catalog record is missing,
--retry-failed re-runs failed agents, and a run whose process died reads `interrupted`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from agents.categories import CATEGORIES
from agents.configuration import FindConfig
from agents.run import FindRequest, run_find
from agents.tools import HubTools
from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.liveness import mark_interrupted
from tests.kits.find import FailingHubTools, make_env

N_AGENTS = len(CATEGORIES)  # one search agent per category brief

RUN_TABLES = ("search_runs", "agent_runs", "plans")


def test_resume_records_a_finished_run_whose_record_was_lost(hub_url, tmp_path):
    env = make_env(hub_url, tmp_path)
    first = asyncio.run(run_find(env, FindRequest("agentic coding", 1000, FindConfig(cache=False))))
    run_id = first["run_id"]
    catalog = Catalog(tmp_path)
    with catalog.writer() as con:  # killed between the agents and the record step: no rows for the run
        for table in RUN_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM candidates")
    again = asyncio.run(run_find(env, resume=run_id))
    assert sum(n for n in again["hub_requests"].values()) == 0  # no agent ran again
    assert catalog.query("SELECT status FROM search_runs WHERE run_id = ?", [run_id])[0]["status"] == "ok"
    assert len(catalog.query("SELECT * FROM agent_runs WHERE run_id = ?", [run_id])) == N_AGENTS
    assert catalog.query("SELECT count(*) AS n FROM candidates")[0]["n"] == len(first["state"]["candidates"])
    with pytest.raises(DraftsetError, match="already finished"):  # now it is recorded
        asyncio.run(run_find(env, resume=run_id))


def test_retry_failed_reruns_only_the_failed_agents(hub_url, tmp_path):
    env = make_env(hub_url, tmp_path)
    config = FindConfig(cache=False)
    broken = FailingHubTools(env.endpoint, env.viewer_base, config, fail_categories={"reasoning"})
    first = asyncio.run(run_find(env, FindRequest("agentic coding", 1000, config), hub=broken))
    run_id = first["run_id"]
    with pytest.raises(DraftsetError, match=r"1 agent\(s\) failed: reasoning") as exc:
        asyncio.run(run_find(env, resume=run_id))
    assert "--retry-failed" in exc.value.hint
    healed = HubTools(env.endpoint, env.viewer_base, FindConfig(cache=False))  # the Hub works again
    final = asyncio.run(run_find(env, resume=run_id, retry_failed=True, hub=healed))
    assert {k for k, n in final["hub_requests"].items() if n} == {"reasoning"}
    runs = {
        r["category"]: r["status"]
        for r in Catalog(tmp_path).query("SELECT category, status FROM agent_runs WHERE run_id = ?", [run_id])
    }
    assert len(runs) == N_AGENTS and set(runs.values()) == {"ok"}
    assert final["state"]["summary"]["agents_ok"] == N_AGENTS and final["state"]["summary"]["agents_failed"] == []
    search = Catalog(tmp_path).query("SELECT status, counts FROM search_runs WHERE run_id = ?", [run_id])[0]
    assert search["status"] == "ok" and json.loads(search["counts"])["agents"] == N_AGENTS


def test_find_killed_mid_run_reads_interrupted(hub_url, tmp_path):
    code = (
        "import asyncio, os, sys\n"
        "from agents.run import FindRequest, stream_find\n"
        "from agents.configuration import FindConfig\n"
        "from tests.kits.find import make_env\n"
        "async def main():\n"
        "    async for event in stream_find(make_env(sys.argv[1], __import__('pathlib').Path(sys.argv[2])),\n"
        "                                   FindRequest('agentic coding', 1000, FindConfig(cache=False))):\n"
        "        if event.get('stage') == 'begin':\n"
        "            os.kill(os.getpid(), 9)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run([sys.executable, "-c", code, hub_url, str(tmp_path)], env=env, timeout=120)
    assert proc.returncode == -9
    catalog = Catalog(tmp_path)
    assert catalog.query("SELECT status FROM search_runs")[0]["status"] == "running"
    assert mark_interrupted(catalog) == 1
    assert catalog.query("SELECT status FROM search_runs")[0]["status"] == "interrupted"
