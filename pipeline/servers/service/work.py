"""Jobs the service starts: a find run (then adapter proposals for the plan's top datasets) and a contract test."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog.errors import DraftsetError
from pipeline.servers.service.jobs import Job, find_work

if TYPE_CHECKING:
    from agents.run import FindEnv
    from pipeline.servers.service.app import Service


def _find_env(service: Service) -> FindEnv:
    from agents.run import FindEnv

    s = service.settings
    client = None
    if s.llm_base_url:
        import openai

        key = s.llm_api_key.get_secret_value() if s.llm_api_key else "none"
        client = openai.AsyncOpenAI(base_url=s.llm_base_url, api_key=key, max_retries=0)
    return FindEnv(
        home=s.home,
        endpoint=s.hf_endpoint,
        viewer_base=s.viewer_base,
        token=service.hf_token,
        llm_client=client,
        llm_model=s.llm_model,
    )


def propose(service: Service, repo_id: str, rows: int = 500) -> Any:
    """Propose and contract-test one dataset through adapters.propose (what `draftset find --propose` runs);
    a dataset refused by name (plain text, media, ...) is reported as not proposed, with the verdict."""
    from adapters.propose import propose_one

    s = service.settings
    outcome = propose_one(
        service.catalog, repo_id, endpoint=s.hf_endpoint, viewer_base=s.viewer_base, token=service.hf_token, rows=rows
    )
    if outcome.refused:
        raise DraftsetError(f"refused: {outcome.refused}")
    return outcome.record


def start_find(service: Service, domain: str, samples: int, policy: str, top: int, user: str) -> Job:
    from agents.configuration import FindConfig
    from agents.run import FindRequest
    from catalog.hub import check_reachable

    check_reachable(service.settings.hf_endpoint)  # a dead Hub is a 400 now, not a failed job later
    if policy == "llm" and not service.settings.llm_base_url:
        raise DraftsetError(
            "the llm policy needs DRAFTSET_LLM_BASE_URL on the service",
            hint="start the service with DRAFTSET_LLM_BASE_URL set, or use policy heuristic",
        )
    request = FindRequest(domain=domain, samples=samples, config=FindConfig(policy=policy))
    params = {"domain": domain, "samples": samples, "policy": policy, "propose": top}
    return service.jobs.submit(
        "find", params, user, find_work(_find_env(service), request, top, lambda repo: propose(service, repo))
    )


def start_test(service: Service, repo_id: str, rows: int, user: str) -> Job:
    from adapters import review, store

    store.require(service.catalog, repo_id)  # an unknown adapter is a 404 now, not a failed job

    def work(job: Job) -> dict[str, Any]:
        s = service.settings
        job.emit({"stage": "contract", "repo_id": repo_id, "rows": rows})
        _, result = review.check_adapter(
            service.catalog, repo_id, endpoint=s.hf_endpoint, token=service.hf_token, rows=rows
        )
        return {"repo_id": repo_id, "passed": result.passed, "contract": result.to_json()}

    return service.jobs.submit("adapter_test", {"repo_id": repo_id, "rows": rows}, user, work)
