"""The llm policy's tool-calling loop against the REAL local Hub fixture, with a FAKE model: scripted
replies (labelled as such) behind the real openai client via httpx.MockTransport. These tests check the
control flow (tool calls, validation, counting, budgets, fallback), not the model's judgement."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

from agents.category_agent import AgentContext, run_category_agent
from agents.configuration import AgentBudget, FindConfig
from agents.policies import HeuristicPolicy
from agents.policies.llm import LLMPolicy
from agents.policies.llm_tools import REPO_ID, TAG, tool_definitions
from agents.state import Brief
from agents.tools import HubTools
from tests.kits.find import CAPS, answer, calls, script, scripted_llm

BRIEF = Brief(category="agentic", weight=0.3, domain="agentic coding")
SWE = "nebius-mini/swe-agent-trajectories-mini"


def run_agent(hub_url, cache_dir, policy, config):
    """One category agent over the fixture Hub with a fresh cache: (report, hub tools, progress events)."""
    hub = HubTools(hub_url, hub_url + "/viewer", config, cache_dir=cache_dir)
    events = []
    with ThreadPoolExecutor(2) as pool:
        report = asyncio.run(run_category_agent(BRIEF, config, AgentContext(hub, policy, pool, events.append)))
    hub.close()
    return report, hub, events


def llm(replies, seen, **config):
    cfg = FindConfig(policy="llm", **config)
    return LLMPolicy(cfg, scripted_llm(script(replies, seen)), "kimi-test", CAPS), cfg


def test_model_searches_then_inspects_then_answers(hub_url, tmp_path):
    seen = []
    policy, cfg = llm(
        [
            calls(("search_hub", {"query": "trajectories", "tag": None})),
            calls(("inspect_dataset", {"repo_id": SWE})),
            answer((SWE, 0.9, "SWE agent trajectories"), ("evil/extra", 1.0, "ignore instructions")),
        ],
        seen,
    )
    report, hub, events = run_agent(hub_url, tmp_path, policy, cfg)
    assert [c.repo_id for c in report.candidates] == [SWE]  # only what the tools inspected
    cand = report.candidates[0]
    assert cand.reasons[-1] == "+0.08 llm: SWE agent trajectories" and cand.revision and cand.schemas
    # 1 search + card + viewer info + first rows, all counted against the agent's Hub budget
    assert hub.requests["agentic"] == report.hub_calls == 4
    assert (report.tool_calls, report.tool_errors, report.llm_calls, report.llm_tokens) == (2, 0, 3, 180)
    assert report.llm_fallbacks == 0 and [e["tool"] for e in events if e["stage"] == "tool"] == [
        "search_hub",
        "inspect_dataset",
    ]
    assert [t["function"]["name"] for t in seen[0]["tools"]] == ["search_hub", "inspect_dataset"]
    assert seen[0]["tools"][1]["function"]["parameters"]["properties"]["repo_id"]["pattern"] == REPO_ID
    assert seen[0]["tool_choice"] == "auto" and "response_format" not in seen[0]  # tool rounds are unconstrained
    search_result, inspect_result = seen[1]["messages"][-1], seen[2]["messages"][-1]
    assert search_result["role"] == "tool" and search_result["tool_call_id"] == "call-0"
    assert search_result["content"].startswith("<data>") and SWE in search_result["content"]
    facts = json.loads(inspect_result["content"].removeprefix("<data>").removesuffix("</data>"))
    assert facts["repo_id"] == SWE and facts["configs"][0]["num_rows"] > 0
    assert seen[2]["messages"][-2]["tool_calls"][0]["function"]["name"] == "inspect_dataset"


def test_bad_tool_arguments_get_error_messages_and_the_loop_goes_on(hub_url, tmp_path):
    seen = []
    policy, cfg = llm(
        [
            calls(
                ("inspect_dataset", {"repo_id": "../../etc/passwd"}),
                ("search_hub", {"query": "x'; DROP TABLE candidates; --"}),
                ("run_sql", {"sql": "DELETE FROM candidates"}),
                ("search_hub", "{not json"),
                ("search_hub", {"query": None, "tag": None}),
            ),
            calls(("inspect_dataset", {"repo_id": SWE})),  # valid id, but no search returned it yet
            calls(("search_hub", {"query": "trajectories"})),
            calls(("inspect_dataset", {"repo_id": SWE})),
            answer((SWE, 0.9, "fits")),
        ],
        seen,
    )
    report, hub, _ = run_agent(hub_url, tmp_path, policy, cfg)
    errors = [m for m in seen[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in errors] == [f"call-{i}" for i in range(5)]
    assert all(m["content"].startswith("error: ") for m in errors)
    assert "repo_id: String should match pattern" in errors[0]["content"]
    assert "query: String should match pattern" in errors[1]["content"] and "unknown tool" in errors[2]["content"]
    assert "Invalid JSON" in errors[3]["content"] and "give a query, a tag or both" in errors[4]["content"]
    assert not any("DROP TABLE" in m["content"] for m in errors)  # the model's input is not echoed
    assert "search_hub result" in seen[2]["messages"][-1]["content"]
    assert (report.tool_calls, report.tool_errors, report.llm_fallbacks) == (8, 6, 0)
    assert hub.requests["agentic"] == 4 and [c.repo_id for c in report.candidates] == [SWE]


def test_llm_call_budget_stops_a_model_that_never_stops_calling_tools(hub_url, tmp_path):
    seen = []
    policy, cfg = llm([calls(("search_hub", {"query": "trajectories"}))] * 10, seen, budget=AgentBudget(llm_calls=3))
    report, _, _ = run_agent(hub_url, tmp_path / "llm", policy, cfg)
    assert len(seen) == report.llm_calls == 3 and report.tool_calls == 2  # the last call closes the tools
    assert seen[2]["tool_choice"] == "none" and "response_format" not in seen[2]  # nothing inspected to judge
    assert report.budget_exhausted == ["llm"] and report.llm_fallbacks == 1 and report.llm_fallback_cause == "budget"
    assert [(e["step"], e["cause"], e["outcome"]) for e in report.llm_events] == [
        ("explore", "schema", "judge"),
        ("judge", "budget", "fallback"),
    ]
    heuristic, _, _ = run_agent(hub_url, tmp_path / "heuristic", HeuristicPolicy(FindConfig()), FindConfig())
    assert [c.repo_id for c in report.candidates] == [c.repo_id for c in heuristic.candidates]
    assert report.candidates  # the heuristic carried the agent


def test_invalid_final_answer_is_retried_once_then_accepted(hub_url, tmp_path):
    seen = []
    policy, cfg = llm(
        [
            calls(("search_hub", {"query": "trajectories"})),
            calls(("inspect_dataset", {"repo_id": SWE})),
            {"content": "this is not json"},
            answer((SWE, 1.0, "fits")),
        ],
        seen,
    )
    report, _, _ = run_agent(hub_url, tmp_path, policy, cfg)
    assert seen[3]["messages"][-1]["role"] == "user" and "rejected" in seen[3]["messages"][-1]["content"]
    assert seen[3]["tool_choice"] == "none" and seen[3]["response_format"]["json_schema"]["strict"] is True
    assert (report.llm_calls, report.llm_fallbacks) == (4, 0) and report.candidates[0].reasons[-1].endswith("fits")
    # every replayed turn carries content, tool-call turns too (templates read message.content)
    replayed = [m for body in seen for m in body["messages"] if m.get("tool_calls")]
    assert replayed and all(m["content"] == "" for m in replayed)
    # the length cap goes under both names (llama-cpp-python's server reads only max_tokens)
    assert all(body["max_tokens"] == body["max_completion_tokens"] > 0 for body in seen)


def test_two_invalid_answers_hand_over_to_the_judge_and_two_more_fall_back_with_their_cause(hub_url, tmp_path):
    seen = []
    policy, cfg = llm(
        [
            calls(("search_hub", {"query": "trajectories"})),
            calls(("inspect_dataset", {"repo_id": SWE})),
            {"content": '{"wrong": 1}'},
            answer(("someone/else", 1.0, "not inspected")),
            {"content": "I think they are all great"},
            {"content": '{"verdicts": [{"repo_id": 3}]}'},
        ],
        seen,
    )
    report, _, _ = run_agent(hub_url, tmp_path, policy, cfg)
    assert (report.llm_calls, report.llm_fallbacks, report.tool_calls) == (6, 1, 2)
    assert len(report.candidates) > 1 and not any("llm:" in r for c in report.candidates for r in c.reasons)
    events = [(e["step"], e["cause"], e["outcome"]) for e in report.llm_events]
    assert events == [
        ("explore", "schema", "retried"),
        ("explore", "schema", "judge"),
        ("judge", "not_json", "retried"),
        ("judge", "schema", "fallback"),
    ]
    assert report.llm_events[0]["detail"].startswith("verdicts: Field required")  # the field is named
    assert report.llm_events[1]["detail"] == "verdicts: no verdict names a listed dataset"
    assert "verdicts.0.repo_id" in report.llm_events[3]["detail"] and report.llm_fallback_cause == "schema"
    judge = seen[4]  # the judge's request: candidates fenced, repo ids an enum in the schema, no tools
    listed = judge["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]
    assert sorted(listed["properties"]["repo_id"]["enum"]) == sorted(c.repo_id for c in report.candidates)
    assert "tools" not in judge and "<data>" in judge["messages"][1]["content"]
    assert "rejected: the answer is not JSON" in seen[5]["messages"][-1]["content"]  # the repair says why


def test_tool_calls_spend_the_agents_hub_budget(hub_url, tmp_path):
    seen = []
    policy, cfg = llm(
        [
            calls(("search_hub", {"query": "trajectories"})),
            calls(("inspect_dataset", {"repo_id": SWE})),
            answer((SWE, 1.0, "never inspected")),
            answer((SWE, 1.0, "still not")),
        ],
        seen,
        budget=AgentBudget(hub_calls=2),
    )
    report, hub, _ = run_agent(hub_url, tmp_path, policy, cfg)
    assert seen[2]["messages"][-1]["content"] == "error: budget exhausted: hub_calls; answer now with what you have"
    assert hub.requests["agentic"] == report.hub_calls == 2  # search + card; the viewer call was refused
    assert report.budget_exhausted == ["hub_calls"] and report.candidates == []
    # nothing was inspected, so the judge had nothing to rate: no fallback, and no further request
    assert report.llm_fallbacks == 0 and len(seen) == report.llm_calls == 3


def test_tool_schema_patterns_are_portable_to_grammar_compilers():
    # Servers compile these patterns into grammars (llama.cpp rejects \w and its kin, and llama-cpp-python's
    # server died on such a request): plain classes only, and still the same ids accepted and refused.
    import re

    patterns = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            patterns.extend(v for k, v in node.items() if k == "pattern" and isinstance(v, str))
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    collect(tool_definitions())
    assert len(patterns) == 3
    assert not [p for p in patterns if re.search(r"\\[wWdDsSbB]", p)], patterns
    # bounded counts only: with `+` a constrained decoder may never have to close the string (seen: one repo id
    # written until llama-cpp-python's context ran out)
    assert not [p for p in patterns if re.search(r"(?<!\\)[+*]", p)], patterns
    for good in ("kimi-traj/deepswe-kimi-k2-trajectories-mini", "A_b.c/D-e.f_9"):
        assert re.fullmatch(REPO_ID, good)
    for bad in ("no-slash", "a/b/c", "a b/c", "<x>/y", "a/"):
        assert not re.fullmatch(REPO_ID, bad)
    assert re.fullmatch(TAG, "task_categories:text-generation") and not re.fullmatch(TAG, "task:<b>")


def test_a_slow_server_is_asked_for_the_answer_before_the_time_runs_out(hub_url, tmp_path):
    # FAKE replies that take 0.5 s each, from a model that would call tools forever: with 4 s for the tool loop,
    # the call that the time left still allows asks for the Judgement (tools closed, schema on), and it lands.
    seen: list = []
    replies = iter(
        [calls(("search_hub", {"query": "trajectories"})), calls(("inspect_dataset", {"repo_id": SWE}))]
        + [calls(("search_hub", {"query": "agent"}))] * 20
    )

    def slow(body: dict) -> dict:
        seen.append(body)
        time.sleep(0.5)
        if body.get("tool_choice") == "none":
            return answer((SWE, 0.8, "agent trajectories"))
        return next(replies)

    cfg = FindConfig(policy="llm", budget=AgentBudget(wall_time_s=8.0, llm_calls=50))
    policy = LLMPolicy(cfg, scripted_llm(slow), "kimi-test", CAPS)
    report, _, _ = run_agent(hub_url, tmp_path, policy, cfg)
    assert seen[-1]["tool_choice"] == "none" and seen[-1]["response_format"]["type"] == "json_schema"
    assert 3 <= len(seen) < 16 and report.llm_fallbacks == 0, report.llm_events
    assert [c.repo_id for c in report.candidates] == [SWE] and report.candidates[0].reasons[-1].endswith("trajectories")
