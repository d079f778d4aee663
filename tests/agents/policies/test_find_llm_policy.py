"""LLM policy control flow with a FAKE model: scripted replies (labelled as such) behind the REAL openai
client via httpx.MockTransport, and a REAL HTTP server on loopback answering HTML. Budgets, dead servers,
probing and fallback causes here; the tool loop over the real local Hub in test_find_llm_tools.py; a real
model (SmolLM2 behind serve-dev) in tests/model. These tests check control flow and counting, not judgement."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openai

from agents.categories import CATEGORIES
from agents.configuration import AgentBudget, FindConfig
from agents.policies.llm import LLMPolicy
from agents.policies.llm_probe import probe
from agents.policies.llm_tools import Toolbox
from agents.state import AgentCounts, Brief, Candidate
from tests.kits.find import CAPS, answer, calls, make_env, probe_reply, script, scripted_llm

N_AGENTS = len(CATEGORIES)  # one search agent per category brief

BRIEF = Brief(category="agentic", weight=0.3, domain="agentic coding")
FOUND = [Candidate(repo_id="a/traj", category="agentic", score=0.5), Candidate(repo_id="b/chat", category="agentic")]


def test_spent_budgets_fall_back_without_calling_the_model():
    for budget, kind in ((AgentBudget(llm_calls=0), "llm"), (AgentBudget(wall_time_s=1e-6), "wall_time")):
        seen, meter = [], AgentCounts(category="agentic")
        policy = LLMPolicy(FindConfig(policy="llm", budget=budget), scripted_llm(script([], seen)), "m", CAPS)
        toolbox = Toolbox(None, "agentic", meter, 1000, None, lambda *a, **k: None)  # never used: no budget
        assert asyncio.run(policy.explore(BRIEF, toolbox, meter)) is None  # None: run the heuristic steps
        assert asyncio.run(policy.judge(BRIEF, FOUND, meter)) == FOUND  # heuristic scores as they were
        assert seen == [] and meter.llm_fallbacks == 1 and meter.budget_exhausted == [kind]
        assert meter.llm_fallback_cause == "budget" and [e["outcome"] for e in meter.llm_events] == [
            "judge",
            "fallback",
        ]


def _refusing_client() -> openai.AsyncOpenAI:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    return openai.AsyncOpenAI(
        base_url="http://llm.invalid/v1",
        api_key="x",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse)),
    )


def test_dead_llm_server_is_retried_once_then_falls_back_and_the_judge_does_not_wait_on_it():
    meter = AgentCounts(category="agentic")
    policy = LLMPolicy(FindConfig(policy="llm"), _refusing_client(), "m", CAPS)
    toolbox = Toolbox(None, "agentic", meter, 1000, None, lambda *a, **k: None)  # never reached: no reply
    assert asyncio.run(policy.explore(BRIEF, toolbox, meter)) is None
    assert asyncio.run(policy.judge(BRIEF, FOUND, meter)) == FOUND
    assert (meter.llm_calls, meter.llm_fallbacks, meter.tool_calls, meter.llm_fallback_cause) == (2, 1, 0, "connection")
    assert "cannot reach the LLM endpoint http://llm.invalid/v1" in meter.llm_events[-1]["detail"]


def test_a_dead_endpoint_at_probe_time_falls_every_agent_back_without_calls():
    policy = LLMPolicy(FindConfig(policy="llm"), _refusing_client(), "m")
    caps = asyncio.run(policy.prepare())
    assert (caps.reached, caps.json_schema, caps.tools) == (False, False, False)
    assert caps.detail["tools"].startswith("connection: cannot reach the LLM endpoint")
    meter = AgentCounts(category="agentic")
    assert asyncio.run(policy.explore(BRIEF, None, meter)) is None
    assert asyncio.run(policy.judge(BRIEF, FOUND, meter)) == FOUND
    assert meter.llm_calls == 0 and meter.llm_fallback_cause == "connection" and meter.llm_events[0]["step"] == "probe"


def test_probe_tells_a_constraining_server_from_one_that_ignores_the_schema():
    for json_schema, tools in ((True, True), (True, False), (False, True), (False, False)):
        client = scripted_llm(lambda body, j=json_schema, t=tools: probe_reply(body, j, t))
        caps = asyncio.run(probe(client, "m"))
        assert (caps.json_schema, caps.tools, caps.reached) == (json_schema, tools, True)
        # the json_object+schema fallback form is asked only where json_schema failed: one request more
        assert caps.tokens == (120 if json_schema else 180)
        assert caps.answer_format == ("json_schema" if json_schema else "prompt")
        if not json_schema:
            assert caps.detail["json_schema"].startswith("not_json: response_format json_schema was not honoured")
            assert caps.detail["json_object_schema"].startswith("not_json: response_format json_object+schema")
        if not tools:
            assert caps.detail["tools"].startswith("no_tool_calls: a forced tool call came back as text")


def test_without_tools_the_model_judges_the_heuristic_finds_in_one_call_and_without_a_schema_when_unsupported():
    seen = []
    caps = CAPS.model_copy(update={"tools": False, "json_schema": False})
    policy = LLMPolicy(
        FindConfig(policy="llm"),
        scripted_llm(script([answer(("a/traj", 0.9, "trajectories"), ("evil/x", 1.0, "pick me"))], seen)),
        "m",
        caps,
    )
    meter = AgentCounts(category="agentic")
    assert asyncio.run(policy.explore(BRIEF, None, meter)) is None and seen == []  # no tools on this endpoint
    judged = asyncio.run(policy.judge(BRIEF, FOUND, meter))
    assert judged[0].reasons[-1] == "+0.08 llm: trajectories" and judged[1] == FOUND[1]  # no verdict: unchanged
    assert len(seen) == meter.llm_calls == 1 and "response_format" not in seen[0] and "tools" not in seen[0]
    assert meter.llm_fallbacks == 0 and meter.llm_events == [] and meter.llm_tokens == 60


def _by_conversation(body: dict) -> dict:
    """FAKE model keyed on the conversation: garbage for the agentic agent; the others search, inspect the
    first hit, then judge it."""
    messages = body["messages"]
    if "agentic / tool-use" in messages[1]["content"]:
        return {"content": "sorry, I cannot answer in JSON"}
    tools = [m for m in messages if m["role"] == "tool"]
    if not tools:
        return calls(("search_hub", {"query": "code"}))
    repo = re.search(r'"repo_id": "([^"]+)"', tools[0]["content"])
    if len(tools) == 1 and repo:
        return calls(("inspect_dataset", {"repo_id": repo.group(1)}))
    return answer((repo.group(1), 0.9, "fits")) if repo else {"content": '{"verdicts": []}'}


def test_llm_policy_through_the_graph_counts_tools_fallbacks_and_their_causes(hub_url, tmp_path):
    from agents.run import FindRequest, run_find
    from catalog import Catalog
    from pipeline.cli.find_cmd import llm_line

    env = make_env(hub_url, tmp_path, llm_client=scripted_llm(_by_conversation, probe=True), llm_model="m")
    final = asyncio.run(run_find(env, FindRequest("agentic coding", 1000, FindConfig(policy="llm"))))
    catalog = Catalog(tmp_path)
    runs = {r["category"]: r for r in catalog.query("SELECT * FROM agent_runs")}
    # agentic: a text answer without tools hands over to the judge, which fails twice: heuristic scores
    assert (runs["agentic"]["llm_fallbacks"], runs["agentic"]["llm_calls"]) == (1, 3)
    assert runs["agentic"]["llm_fallback_cause"] == "not_json" and runs["agentic"]["n_candidates"] > 1
    assert (runs["coding"]["llm_fallbacks"], runs["coding"]["llm_calls"], runs["coding"]["n_candidates"]) == (0, 3, 1)
    counts = json.loads(catalog.query("SELECT counts FROM search_runs")[0]["counts"])
    assert counts["llm_fallbacks"] == 1 and counts["llm_calls"] == sum(r["llm_calls"] for r in runs.values())
    assert counts["llm_fallback_causes"] == {"not_json": 1} and counts["llm_tokens"] == 60 * counts["llm_calls"]
    assert counts["tool_calls"] == 2 * 9 and counts["tool_errors"] == 0
    probed = json.loads(catalog.query("SELECT llm_probe FROM search_runs")[0]["llm_probe"])
    assert (probed["json_schema"], probed["tools"], probed["detail"]) == (
        True,
        True,
        {"json_schema": "ok", "tools": "ok"},
    )
    events = catalog.query("SELECT step, cause, outcome FROM llm_events WHERE category = 'agentic' ORDER BY seq")
    assert [tuple(e.values()) for e in events] == [
        ("explore", "no_tool_calls", "judge"),
        ("judge", "not_json", "retried"),
        ("judge", "not_json", "fallback"),
    ]
    line = llm_line(final["llm_probe"], final["state"]["summary"], final["state"]["reports"], final["run_id"])
    assert "json_schema+tools" in line and "fallbacks 1/10 (not_json 1)" in line
    assert "first: the answer is not JSON: 'sorry, I cannot answer in JSON'" in line


class _HtmlPage(BaseHTTPRequestHandler):
    """A web UI where the API should be: every request gets 200 text/html."""

    def do_POST(self):  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        page = b"<!doctype html><html><body>Welcome to the chat UI</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


def test_an_endpoint_answering_html_is_a_counted_fallback_naming_the_llm_endpoint(hub_url, tmp_path):
    from agents.run import FindRequest, run_find
    from catalog import Catalog
    from pipeline.cli.find_cmd import llm_line

    server = ThreadingHTTPServer(("127.0.0.1", 0), _HtmlPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        client = openai.AsyncOpenAI(base_url=base, api_key="x", max_retries=0)
        env = make_env(hub_url, tmp_path, llm_client=client, llm_model="m")
        final = asyncio.run(run_find(env, FindRequest("agentic coding", 1000, FindConfig(policy="llm"))))
    finally:
        server.shutdown()
    summary = final["state"]["summary"]
    assert summary["llm_fallbacks"] == N_AGENTS and summary["llm_fallback_causes"] == {"not_json": N_AGENTS}
    assert summary["llm_calls"] == 0 and summary["agents_ok"] == N_AGENTS  # the probe's verdict; no agent called again
    line = llm_line(final["llm_probe"], summary, final["state"]["reports"], final["run_id"])
    assert f"the LLM endpoint {base} answered HTTP 200 with text/html" in line and "HF_ENDPOINT" not in line
    rows = Catalog(tmp_path).query("SELECT step, cause, status_code, outcome FROM llm_events")
    assert len(rows) == N_AGENTS and {tuple(r.values()) for r in rows} == {("probe", "not_json", 200, "fallback")}


def test_a_server_that_takes_the_schema_only_as_json_object_gets_it_that_way():
    # llama-cpp-python's server refuses response_format json_schema (HTTP 500 from its request validation) and
    # constrains {"type": "json_object", "schema": ...} instead: the probe finds that form and the judge uses it.
    def server(body: dict) -> dict:
        if body.get("response_format", {}).get("type") == "json_schema":
            return {"__http__": {"status": 500, "body": {"error": "Input should be 'text' or 'json_object'"}}}
        return probe_reply(body, json_schema=False, tools=False, json_object_schema=True)

    caps = asyncio.run(probe(scripted_llm(server), "m"))
    assert (caps.json_schema, caps.json_object_schema, caps.tools) == (False, True, False)
    assert caps.answer_format == "json_object_schema" and caps.detail["json_object_schema"] == "ok"
    assert caps.detail["json_schema"].startswith("http_status: HTTP 500")
    form = caps.response_format("Judgement", {"type": "object"})
    assert form == {"type": "json_object", "schema": {"type": "object"}}
    assert CAPS.response_format("J", {"type": "object"})["type"] == "json_schema"
    assert CAPS.model_copy(update={"json_schema": False}).response_format("J", {}) is None
