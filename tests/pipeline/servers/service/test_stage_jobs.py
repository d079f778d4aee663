"""Every stage after ingest as a job of the real service: mix -> report, build -> capture -> train -> check,
with the roles, progress (the stages' own counts), checks before queueing, and resuming what was cut off."""

from __future__ import annotations

import pytest
from service_kit import Svc, add_users

from catalog import Catalog
from pipeline.settings import Settings
from tests.pipeline.conftest import make_conv, write_source

HOSTILE = "<img src=x onerror=alert(1)>"  # a category as a Hub card could carry it: shown as text only


def _home(home) -> None:
    from pipeline.model.toy import ToyConfig, init_toy

    for repo, category, n in (("acme/chat", "general chat", 30), ("acme/code", HOSTILE, 20)):
        convs = [
            make_conv(
                repo, i, f"question {i} about {category} and more", f"answer {i} " * 5, category=category, mode="native"
            )
            for i in range(n)
        ]
        write_source(home, convs)
    init_toy(home / "models" / "toy-target", ToyConfig(train_steps=0, vocab_size=300, hidden_size=16))


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path_factory.mktemp("stage-home")
    _home(home)
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))
    yield Svc(running.url, home, tokens)
    running.stop()


def start(svc: Svc, kind: str, body: dict, role: str = "operator"):
    with svc.api(role) as c:
        return c.post(f"/api/stages/{kind}", json=body)


def run_ok(svc: Svc, kind: str, body: dict, timeout_s: float = 240) -> dict:
    resp = start(svc, kind, body)
    assert resp.status_code == 200, resp.text
    job = svc.wait_job(resp.json()["job_id"], timeout_s)
    assert job["status"] == "ok", (job["error"], job["next"])
    return job


def test_viewers_list_every_stage_with_its_request_fields(svc):
    with svc.api("viewer") as c:
        kinds = {k["kind"]: k for k in c.get("/api/stages").json()}
    assert list(kinds) == ["ingest", "mix", "regenerate", "build", "capture", "train", "check", "report"]
    assert "weights" in kinds["mix"]["body"]["properties"] and "draft" in kinds["check"]["body"]["properties"]


@pytest.mark.parametrize("role, status", [(None, 401), ("viewer", 403), ("reviewer", 403)])
def test_starting_a_stage_needs_the_operator_role(svc, role, status):
    assert start(svc, "mix", {"name": "m"}, role).status_code == status


@pytest.mark.parametrize(
    "kind, body, says",
    [
        ("mixx", {}, "did you mean 'mix'"),
        ("mix", {"name": "m", "weights": {"general chta": 1}}, "general chat"),
        ("mix", {"name": "m", "settings": {"sample": 10}}, "unknown setting 'sample'"),
        ("mix", {"name": "m", "settings": {"samples": "ten"}}, "samples"),
        ("mix", {"name": "../up"}, "mix"),
        ("mix", {"name": "m", "colour": 1}, "colour"),
        ("build", {"mix": "nosuch"}, "unknown mix 'nosuch'"),
        ("build", {"mix": "m", "model": "/etc"}, "model"),
        ("regenerate", {"mix": "m"}, "no target endpoint"),
        ("train", {"capture": "nothing"}, "capture"),
        ("report", {"mix": "m", "settings": {"x": 1}}, "takes no settings"),
    ],
)
def test_a_bad_name_or_setting_is_refused_before_any_job_is_queued(svc, mixed, kind, body, says):
    before = jobs_stored(svc)
    resp = start(svc, kind, body)
    assert resp.status_code in (400, 404), resp.text
    assert says in resp.json()["error"], resp.json()
    assert jobs_stored(svc) == before


def jobs_stored(svc: Svc) -> int:
    with svc.api("viewer") as c:
        return c.post("/api/sql", json={"query": "SELECT count(*) AS n FROM service_jobs"}).json()["rows"][0][0]


@pytest.fixture(scope="module")
def mixed(svc) -> dict:
    return run_ok(svc, "mix", {"name": "m", "settings": {"samples": 40, "seed": 3}})


@pytest.fixture(scope="module")
def built(svc, mixed) -> dict:
    return run_ok(svc, "build", {"mix": "m", "source": "mix", "settings": {"draft_vocab_size": 64, "max_length": 96}})


def test_mix_then_report_as_jobs_with_the_stages_own_counts(svc, mixed):
    job = mixed
    result = job["result"]
    assert result["figures"]["selected"] == 40 and result["name"] == "m"
    stages = {r["stage"]: r for r in result["stage_runs"]}
    assert stages["mix"]["counts"]["out"] == 40
    assert stages["dedup"]["counts"]["in"] == 50  # every ingested row went through dedup
    assert {r["status"] for r in job["runs"].values()} == {"ended"}  # live view of the same runs
    report = run_ok(svc, "report", {"mix": "m"})["result"]
    assert report["page"] == "/reports/m" and report["plots"]


def test_build_capture_train_check_as_jobs(svc, built):
    build = built
    assert build["result"]["n_rows"] > 0 and build["result"]["counts"]["in"] == 40
    capture = run_ok(svc, "capture", {"build": "m", "settings": {"device": "cpu", "max_rows": 24}})
    assert capture["result"]["samples"] == 24
    train = run_ok(
        svc,
        "train",
        {"capture": "m", "settings": {"device": "cpu", "max_steps": 3, "batch_tokens": 512, "ttt_steps": 2}},
    )
    assert len(train["result"]["train_step_accuracy"]) == 2
    assert train["result"]["complete"] is False  # stopped at max_steps: resumable from its saved state
    with svc.api("operator") as c:
        resp = c.post(f"/api/jobs/{train['job_id']}/resume")
    assert resp.status_code == 200, resp.text
    went_on = svc.wait_job(resp.json()["job_id"], 240)
    assert went_on["status"] == "ok" and went_on["params"]["settings"]["resume"] is True, went_on
    check = run_ok(svc, "check", {"draft": "m", "captures": "m", "max_samples": 4, "max_new_tokens": 4})
    assert check["result"]["steps"] == 2 and check["result"]["wirings"][0]["accept_length"] >= 1


BUILD = {"mix": "m", "source": "mix", "settings": {"draft_vocab_size": 64, "max_length": 96}}


def test_an_interrupted_stage_job_is_resumed_and_skips_what_was_done(tmp_path):
    """A build job left `running` by a killed service: the next start marks it interrupted with how to resume
    it; resuming queues it again with its own params (never its overwrite) and the stage skips built rows."""
    from pipeline.servers.service.server import serve_in_thread

    home = tmp_path / "home"
    _home(home)
    tokens = add_users(home)
    first = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))
    try:
        run_ok(Svc(first.url, home, tokens), "mix", {"name": "m", "settings": {"samples": 40}})
        run_ok(Svc(first.url, home, tokens), "build", BUILD)
    finally:
        first.stop()
    Catalog(home).upsert(
        "service_jobs",
        [
            {
                "job_id": "build-killed",
                "kind": "build",
                "params": {**BUILD, "overwrite": True},
                "status": "running",
                "started_by": "olga",
            }
        ],
    )
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home)))
    try:
        svc = Svc(running.url, home, tokens)
        with svc.api("viewer") as c:
            left = c.get("/api/jobs/build-killed").json()
            assert left["status"] == "interrupted"
            assert left["error"].endswith(
                "resume it: POST /api/jobs/build-killed/resume (the job page's Resume button)"
            )
            assert c.post("/api/jobs/build-killed/resume").status_code == 403  # operators resume
        with svc.api("operator") as c:
            resp = c.post("/api/jobs/build-killed/resume")
        assert resp.status_code == 200, resp.text
        job = svc.wait_job(resp.json()["job_id"])
        assert job["status"] == "ok", job
        assert job["params"]["overwrite"] is False  # resuming never discards what the cut-off run wrote
        counts = job["result"]["counts"]
        assert counts["skipped_already_built"] == 40 and counts["out"] == 0  # nothing built twice
        with svc.api("operator") as c:
            again = c.post(f"/api/jobs/{job['job_id']}/resume")
        assert again.status_code == 400 and "only an interrupted or failed job" in again.json()["error"]
    finally:
        running.stop()


def test_regenerate_as_a_job_goes_only_to_the_services_own_targets(tmp_path):
    """The service regenerates through its DRAFTSET_TARGET_ENDPOINTS with its own key; a request naming any
    other server is refused (the key must not travel to a server a request picks)."""
    from pipeline.servers.service.server import serve_in_thread
    from tests.kits.fake_openai import Behaviour, RunningServer

    target = RunningServer(Behaviour(reply_words=6, latency_s=1.0))
    home = tmp_path / "home"
    convs = [make_conv("acme/ask", i, f"please answer question number {i}", category="general chat") for i in range(12)]
    write_source(home, convs)
    tokens = add_users(home)
    running = serve_in_thread(Settings(DRAFTSET_HOME=str(home), DRAFTSET_TARGET_ENDPOINTS=[target.url]))
    try:
        svc = Svc(running.url, home, tokens)
        run_ok(svc, "mix", {"name": "r", "settings": {"samples": 12}})
        elsewhere = start(svc, "regenerate", {"mix": "r", "endpoints": ["http://127.0.0.1:9/"]})
        assert elsewhere.status_code == 400 and "unknown endpoint" in elsewhere.json()["error"]
        bad = start(svc, "regenerate", {"mix": "r", "settings": {"api_key_env": "DRAFTSET_TOKEN"}})
        assert bad.status_code == 400 and "unknown setting 'api_key_env'" in bad.json()["error"]
        first = start(svc, "regenerate", {"mix": "r", "settings": {"temperature": 0.0}})
        assert first.status_code == 200, first.text
        second = start(svc, "regenerate", {"mix": "r"})  # the same folder, while the first writes it
        assert second.status_code == 400 and f"{first.json()['job_id']} is already" in second.json()["error"]
        job = svc.wait_job(first.json()["job_id"])
        assert job["status"] == "ok", job
        assert job["result"]["on_disk"]["results"] == 12 and job["result"]["input_rows"] == 12
        (run,) = [r for r in job["result"]["stage_runs"] if r["stage"] == "regenerate"]
        assert run["counts"]["out"] == 12  # the stage's own count, as the job's progress showed it
    finally:
        running.stop()
        target.stop()
