"""Run (or resume) the find graph with a SQLite checkpoint, streaming per-agent progress events.

    async for event in stream_find(env, FindRequest(domain="agentic coding", samples=100_000)):
        ...  # {"category", "stage", "hub_calls", ...}; the last event is {"stage": "finished", ...}

`--resume RUN_ID` re-enters the same LangGraph thread: agents whose results were checkpointed are
not run again, only the unfinished ones (and the nodes after them).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.configuration import FindConfig
from agents.graph import Runtime, build_graph
from agents.policies import make_policy
from agents.tools import HubTools
from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.hub import check_reachable


@dataclass
class FindEnv:
    """Where to search and where to write; built by the CLI from settings (tokens stay in here)."""

    home: Path
    endpoint: str
    viewer_base: str
    token: str | None = field(default=None, repr=False)  # never printed, logged or checkpointed
    llm_client: Any | None = None
    llm_model: str | None = None


@dataclass
class FindRequest:
    domain: str
    samples: int
    config: FindConfig = FindConfig()


def new_run_id() -> str:
    return f"find-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


async def stream_find(env: FindEnv, request: FindRequest | None = None, *, resume: str | None = None,
                      run_id: str | None = None, hub: HubTools | None = None) -> AsyncIterator[dict[str, Any]]:
    """Start a run (request) or continue one (resume=RUN_ID); yields progress, then the final state."""
    if (request is None) == (resume is None):
        raise ValueError("give either a request or resume=RUN_ID")
    check_reachable(env.endpoint)  # a dead Hub gets one clear error now, not ten agents' retries later
    env.home.mkdir(parents=True, exist_ok=True)
    run_id = resume or run_id or new_run_id()
    cfg: dict[str, Any] = {"configurable": {"thread_id": run_id}}
    async with AsyncSqliteSaver.from_conn_string(str(Home(env.home).find_checkpoints)) as saver:
        if resume:
            saved = await build_graph(FindConfig()).compile(checkpointer=saver).aget_state(cfg)
            if not saved.values:
                raise DraftsetError(f"no find run {run_id!r} in {Home(env.home).find_checkpoints}",
                                    hint="use the run id `draftset find` printed when it started (runs that "
                                         "finished are listed by: draftset sql \"SELECT run_id FROM search_runs\")")
            if not saved.next:
                raise DraftsetError(f"find run {run_id!r} already finished",
                                    hint=f"draftset sql \"SELECT * FROM candidates WHERE last_run_id = '{run_id}'\"")
            config, graph_input = FindConfig(**saved.values["config"]), None
        else:
            config = request.config
            graph_input = {"run_id": run_id, "domain": request.domain, "samples": request.samples,
                           "config": config.model_dump(mode="json"), "started_at": time.time(), "reports": []}
        cfg["max_concurrency"] = config.max_concurrency
        hub = hub or HubTools(env.endpoint, env.viewer_base, config, token=env.token,
                              cache_dir=Home(env.home).hub_cache)
        policy = make_policy(config, env.llm_client, env.llm_model)
        with ThreadPoolExecutor(max_workers=16, thread_name_prefix="find-agent") as pool:
            cfg["configurable"]["runtime"] = Runtime(hub=hub, policy=policy, executor=pool,
                                                     catalog=Catalog(env.home), has_token=bool(env.token))
            graph = build_graph(config).compile(checkpointer=saver)
            yield {"stage": "begin", "run_id": run_id, "resumed": bool(resume)}
            # aclosing: when the caller stops early (Ctrl-C), LangGraph still flushes the writes of
            # the agents that finished, so --resume does not repeat them.
            async with aclosing(graph.astream(graph_input, cfg, stream_mode=["custom", "updates"])) as stream:
                async for mode, chunk in stream:
                    if mode == "custom":
                        yield chunk
                        continue
                    for node, update in chunk.items():  # a node finished: its writes are being saved
                        for report in (update or {}).get("reports", []) if node.endswith("category_agent") else []:
                            yield {"category": report["category"], "stage": "saved", "status": report["status"]}
                        yield {"stage": "node", "node": node}
            final = (await graph.aget_state(cfg)).values
        yield {"stage": "finished", "run_id": run_id, "state": final, "hub_requests": dict(hub.requests)}


async def run_find(env: FindEnv, request: FindRequest | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run to completion without progress display; returns the final event."""
    last: dict[str, Any] = {}
    async for event in stream_find(env, request, **kwargs):
        last = event
    return last
