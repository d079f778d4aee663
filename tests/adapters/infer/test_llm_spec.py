"""`--policy llm`: the model's structured reading, through the real openai client and a real HTTP server;
the contract alone decides whether it stands."""

from __future__ import annotations

import json

import openai
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.infer.llm_spec import propose_with_llm
from adapters.prove.contract import run_contract
from adapters.spec import SourceSpec
from pipeline.servers.localhub.server import start_in_thread
from tests.kits.adapters import raw

# Turns keyed by letters: no speaker key has alternating labels and no text key is recognisable by name,
# and the texts are single tokens, so structure cannot decide.
ROWS = [{"log": [{"k": "Q", "v": f"ask{i}"}, {"k": "R", "v": f"answer{i}"}]} for i in range(6)]


def _server(answer: dict):
    seen: list[dict] = []

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        return JSONResponse(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": json.dumps(answer)},
                    }
                ],
            }
        )

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    return start_in_thread(lambda: uvicorn.Server(config), "127.0.0.1", 0, name="llm stub"), seen


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)


def test_model_reading_is_used_only_when_structure_fails_and_the_contract_decides():
    structural = detect(ROWS)
    assert structural.layout is None and structural.refusal is None
    reading = {
        "layout": "messages",
        "messages_path": "log",
        "role_key": "k",
        "content_key": "v",
        "role_map": {"Q": "user", "R": "assistant"},
        "why": "Q asks and R answers",
    }
    running, seen = _server(reading)
    try:
        d = propose_with_llm(ROWS, "no layout", client=_client(running.url), model="m")
    finally:
        running.stop()
    assert seen and seen[0]["response_format"]["type"] == "json_schema"
    assert d is not None and d.fields["role_map"] == {"Q": "user", "R": "assistant"}
    assert "proposed by the model" in d.reasons["role_key"] and "role_key" in d.needs_review
    source = SourceSpec(repo_id="lab/x", revision="a" * 40, config="default", split="train", data_files=["x"])
    spec = build_proposal(d, list(enumerate(ROWS)), source, "").spec
    assert run_contract(spec, raw(ROWS)).passed

    wrong = {**reading, "role_map": {"Q": "user"}}  # the model forgot a label: the contract says so
    running, _ = _server(wrong)
    try:
        d = propose_with_llm(ROWS, "no layout", client=_client(running.url), model="m")
    finally:
        running.stop()
    spec = build_proposal(d, list(enumerate(ROWS)), source, "").spec
    result = run_contract(spec, raw(ROWS))
    assert not result.passed and "'R'" in next(c.detail for c in result.checks if c.name == "roles_mapped")


def test_an_off_schema_answer_leaves_the_structural_verdict():
    running, _ = _server({"layout": "sideways"})
    try:
        assert propose_with_llm(ROWS, "no layout", client=_client(running.url), model="m") is None
    finally:
        running.stop()
