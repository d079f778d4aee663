"""A find killed at any point can be resumed: the request is checkpointed before the LLM probe and the first
agent, and a resume says what it will redo before it does it."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from agents.categories import CATEGORIES
from agents.configuration import FindConfig
from agents.run import FindRequest, new_run_id, run_find, stream_find
from catalog import Catalog
from tests.kits.find import make_env

N_AGENTS = len(CATEGORIES)  # one search agent per category brief


def test_a_run_stopped_before_its_first_agent_resumes_and_says_what_it_redoes(hub_url, tmp_path):
    env = make_env(hub_url, tmp_path)
    run_id = new_run_id()

    async def stop_before_the_agents() -> list[str]:
        stages = []
        request = FindRequest("agentic coding", 1000, FindConfig(cache=False))
        async with aclosing(stream_find(env, request, run_id=run_id)) as events:
            async for event in events:  # killed here, as a SIGTERM or a crash would: nothing ran yet
                stages.append(event["stage"])
                break
        return stages

    assert asyncio.run(stop_before_the_agents()) == ["begin"]
    events: list[dict] = []

    async def resume() -> None:
        async for event in stream_find(env, resume=run_id):
            events.append(event)

    asyncio.run(resume())
    assert events[0]["stage"] == "resume" and "will run every step" in events[0]["redo"][0]
    final = events[-1]
    assert final["stage"] == "finished" and final["state"]["summary"]["agents_ok"] == N_AGENTS
    assert final["state"]["domain"] == "agentic coding"  # the request came back from the checkpoint
    rows = Catalog(tmp_path).query("SELECT status FROM search_runs WHERE run_id = ?", [run_id])
    assert rows[0]["status"] == "ok"


def test_a_resume_after_the_agents_names_the_steps_it_redoes(hub_url, tmp_path):
    env = make_env(hub_url, tmp_path)
    first = asyncio.run(run_find(env, FindRequest("agentic coding", 1000, FindConfig(cache=False))))
    with Catalog(tmp_path).writer() as con:  # the record step's writes were lost
        con.execute("DELETE FROM search_runs WHERE run_id = ?", [first["run_id"]])
    events: list[dict] = []

    async def resume() -> None:
        async for event in stream_find(env, resume=first["run_id"]):
            events.append(event)

    asyncio.run(resume())
    assert events[0]["redo"] == [
        "agents done: 10 of 10",
        "the catalog has no record of the run: will redo merge → rank → plan_mix → record → summary",
    ]
