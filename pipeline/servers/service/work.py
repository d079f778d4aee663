"""Jobs the service starts: a find run (then adapter proposals for the plan's top datasets), a contract test, an ingest."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.servers.service.jobs import Job, find_work
from pipeline.servers.service.stage_job import StageBody

if TYPE_CHECKING:
    from adapters.review.propose import Outcome
    from agents.run import FindEnv
    from pipeline.servers.service.context import Service


def _find_env(service: Service) -> FindEnv:
    from agents.run import FindEnv
    from pipeline.train.recipes import steps_for_tokens

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
        train_steps=steps_for_tokens,  # the forecast speaks for the recipe a train job will apply
    )


def propose(service: Service, repo_id: str, rows: int = 500, category: str | None = None) -> Outcome:
    """Propose and contract-test one dataset through adapters.review.propose (what `draftset find --propose` runs);
    a dataset refused by name (plain text, media, ...) is an outcome with its verdict, not an error."""
    from adapters.review.propose import propose_one

    s = service.settings
    return propose_one(
        service.catalog,
        repo_id,
        endpoint=s.hf_endpoint,
        viewer_base=s.viewer_base,
        token=service.hf_token,
        rows=rows,
        category=category,
    )


def start_propose(service: Service, repo_id: str, rows: int, category: str | None, user: str) -> Job:
    """`draftset adapters propose REPO` as a job: one dataset inferred, stored and contract-tested by the
    service that owns the catalog; the result carries the outcome line and, when stored, the API's summary."""
    from catalog.names import require_known

    if category is not None:  # a typo is a 400 now, not a failed job
        from agents.categories import BY_KEY

        require_known("category", category, [*BY_KEY, "general"], where="category", hint="leave it out")

    def work(job: Job) -> dict[str, Any]:
        from pipeline.servers.service.review_data import summary

        job.emit({"stage": "propose", "repo_id": repo_id, "rows": rows})
        outcome = propose(service, repo_id, rows, category)
        return {
            "repo_id": repo_id,
            "ok": outcome.ok,
            "line": outcome.line(),
            "refused": outcome.refused,
            "error": outcome.error,
            "adapter": summary(outcome.record) if outcome.record is not None else None,
        }

    return service.jobs.submit("adapter_propose", {"repo_id": repo_id, "rows": rows, "category": category}, user, work)


def start_find(service: Service, domain: str, samples: int, policy: str, top: int, user: str) -> Job:
    from agents.configuration import FindConfig
    from agents.run import FindRequest, new_run_id
    from catalog.hub import check_reachable

    check_reachable(service.settings.hf_endpoint)  # a dead Hub is a 400 now, not a failed job later
    if policy == "llm" and not service.settings.llm_base_url:
        raise DraftsetError(
            "the llm policy needs DRAFTSET_LLM_BASE_URL on the service",
            hint="start the service with DRAFTSET_LLM_BASE_URL set, or use policy heuristic",
        )
    request = FindRequest(domain=domain, samples=samples, config=FindConfig(policy=policy))
    run_id = new_run_id()  # in the job's record from the start: an interrupted job says what to resume
    params = {"domain": domain, "samples": samples, "policy": policy, "propose": top, "run_id": run_id}
    return service.jobs.submit(
        "find",
        params,
        user,
        find_work(_find_env(service), request, top, lambda repo: propose(service, repo), run_id, service.catalog),
    )


def start_test(service: Service, repo_id: str, rows: int, user: str) -> Job:
    from adapters.review import review, store

    store.require(service.catalog, repo_id)  # an unknown adapter is a 404 now, not a failed job

    def work(job: Job) -> dict[str, Any]:
        s = service.settings
        job.emit({"stage": "contract", "repo_id": repo_id, "rows": rows})
        _, result = review.check_adapter(
            service.catalog, repo_id, endpoint=s.hf_endpoint, token=service.hf_token, rows=rows
        )
        return {"repo_id": repo_id, "passed": result.passed, "contract": result.to_json()}

    return service.jobs.submit("adapter_test", {"repo_id": repo_id, "rows": rows}, user, work)


class IngestBody(StageBody):
    plan: str | None = Field(None, description="every dataset of this plan")
    repos: list[str] = Field(default_factory=list, max_length=1000, description="only these (wins over plan)")
    fresh: bool = Field(False, description="delete the datasets' shards first instead of resuming")
    all_rows: bool = Field(False, description="with plan: read every row, not the plan's quota")
    # The ingest stage's own settings (IngestConfig: max_conversation_chars, oversample, sample_seed), checked
    # by the stage's model before the job is queued.
    settings: dict[str, Any] = Field(default_factory=dict, max_length=10)


def prepare_ingest(service: Service, body: IngestBody) -> Callable[[Job], dict[str, Any]]:
    """Ingest approved datasets (the `draftset ingest` stage) on the service's catalog writer.

    Which datasets, and the stage's settings, are settled now (an unknown plan, repo or setting, or nothing
    approved, is a 400); each dataset's gate and counts are the job's: one failing is reported with its
    reason and the others carry on, as in the CLI. With a plan, each source is read up to its quota, as locally."""
    from pipeline.ingest.config import SETTABLE as INGEST_SETTABLE
    from pipeline.ingest.config import IngestConfig
    from pipeline.ingest.fanout import ingest
    from pipeline.ingest.run import repos_to_ingest
    from pipeline.stage import stage_settings

    plan, repos, fresh, all_rows = body.plan, body.repos, body.fresh, body.all_rows
    unknown = sorted(set(body.settings) - set(INGEST_SETTABLE))
    if unknown:
        raise DraftsetError(
            f"unknown ingest setting(s): {', '.join(unknown)}",
            hint=f"the settings it takes: {', '.join(INGEST_SETTABLE)}",
        )
    values = stage_settings(IngestConfig, None, body.settings, settable=INGEST_SETTABLE)
    _check_names(service, plan, repos)
    chosen = repos_to_ingest(service.catalog, plan, repos or None)

    def work(job: Job) -> dict[str, Any]:
        s = service.settings
        datasets: list[dict[str, Any]] = []
        failed: list[str] = []
        for n, repo_id in enumerate(chosen, 1):
            job.emit({"stage": "ingest", "repo_id": repo_id, "status": "running", "n": n, "of": len(chosen)})
            (r,) = ingest(
                service.catalog,
                s.home,
                [repo_id],
                endpoint=s.hf_endpoint,
                token=service.hf_token,
                fresh=fresh,
                plan_id=plan,
                all_rows=all_rows,
                **values,
            )
            datasets.append({"repo_id": r.repo_id, "counts": r.counts, "error": r.error, "next": r.hint})
            if r.error:
                failed.append(r.repo_id)
            status = "failed" if r.error else "ok"
            job.emit({"stage": "ingest", "repo_id": repo_id, "status": status, "n": n, "of": len(chosen), **r.counts})
        job.result = {
            "datasets": datasets,
            "ok": len(datasets) - len(failed),
            "failed": len(failed),
            "quarantine": f"{Home(s.home).normalized_root}/*/quarantine.jsonl",
        }
        if failed:  # the job fails as the CLI does; its result still holds every dataset's counts and reason
            raise DraftsetError(
                f"ingest failed for {len(failed)} of {len(datasets)} dataset(s): " + ", ".join(failed),
                hint="the other datasets' shards are kept; fix the named ones and ingest again (resumes by id)",
            )
        return job.result

    return work


def _check_names(service: Service, plan: str | None, repos: list[str]) -> None:
    """A mistyped plan or repo is one line with a did-you-mean, as `draftset ingest` says it locally."""
    from catalog.names import require_known

    cat = service.catalog
    if plan is not None:
        plans = [r["plan_id"] for r in cat.query("SELECT plan_id FROM plans")]
        require_known("plan", plan, plans, hint='draftset find "<domain>" makes a plan')
    known = [r["repo_id"] for r in cat.query("SELECT repo_id FROM adapters")] if repos else []
    for repo in dict.fromkeys(repos):
        require_known("dataset", repo, known, where="--repo", hint="propose one: draftset adapters propose OWNER/NAME")
