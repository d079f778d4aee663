"""The service's JSON API over real HTTP: roles, jobs with live events, read-only SQL, adapter review."""

from __future__ import annotations

import json

import pytest

from agents.categories import CATEGORIES


def test_health_is_open_and_everything_else_needs_a_token(service):
    with service.api(None) as anon:
        assert anon.get("/health").json() == {"status": "ok"}
        for method, path in (("GET", "/api/adapters"), ("POST", "/api/sql"), ("GET", "/api/jobs/x")):
            resp = anon.request(method, path, json={})
            assert resp.status_code == 401, (path, resp.text)
            assert set(resp.json()) == {"error", "next"}
        bad = anon.get("/api/adapters", headers={"Authorization": "Bearer dst_not-a-real-token"})
        assert bad.status_code == 401 and "invalid or revoked token" in bad.json()["error"]
        assert "/api/find" in anon.get("/openapi.json").json()["paths"]


def test_roles_are_ranked_and_a_403_names_the_role_needed(service, found):
    repo = found["result"]["adapters_proposed"][0]
    with service.api("viewer") as viewer:
        assert viewer.get("/api/me").json() == {"name": "vera", "role": "viewer"}
        refused = viewer.post(f"/api/adapters/{repo}/approve", json={"note": "x"})
        assert refused.status_code == 403
        assert refused.json()["error"] == "this needs the reviewer role; vera is a viewer"
        assert viewer.post("/api/find", json={"domain": "x"}).status_code == 403
    with service.api("reviewer") as reviewer:
        no_job = reviewer.post("/api/find", json={"domain": "x"})
        assert no_job.status_code == 403 and "operator role" in no_job.json()["error"]


def test_find_job_reports_agents_plan_hours_and_tb_and_streams_events(service, found):
    result = found["result"]
    assert result["datasets"] > 0 and result["regen_hours"] >= 0 and result["hidden_state_tb"] > 0
    assert result["agents_ok"] == len(CATEGORIES) and len(found["agents"]) == len(CATEGORIES)
    assert all(a["stage"] in ("done", "saved") for a in found["agents"].values()), found["agents"]
    assert len(result["adapters_proposed"]) == 2 and found["started_by"] == "olga"
    # A late subscriber gets every event so far, then the end; events name every agent.
    with service.api("viewer") as viewer, viewer.stream("GET", f"/api/jobs/{found['job_id']}/events") as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in resp.iter_lines() if line]
    events = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert lines[-2] == "event: end" and json.loads(lines[-1][5:])["status"] == "ok"
    assert {e["category"] for e in events if "category" in e} == set(found["agents"])
    with service.api("viewer") as viewer:
        plan = viewer.get("/api/plan").json()
        assert plan["plan_id"] == result["plan_id"] and plan["hidden_state_tb"] == pytest.approx(
            result["hidden_state_tb"]
        )
        assert viewer.get("/api/jobs/nope").status_code == 404


def test_sql_streams_rows_with_the_cli_guards(service, found):
    with service.api("viewer") as viewer:
        ok = viewer.post("/api/sql", json={"query": "SELECT repo_id FROM candidates ORDER BY repo_id", "limit": 3})
        data = ok.json()
        assert ok.status_code == 200 and data["columns"] == ["repo_id"]
        assert data["row_count"] == len(data["rows"]) == 3 and data["truncated"] is True
        for query, words in (
            ("DELETE FROM adapters", "DELETE statements are refused"),
            ("SELECT * FROM read_csv('/etc/passwd')", "not files"),
            ("SELECT * FROM no_such_table", "query failed"),
        ):
            resp = viewer.post("/api/sql", json={"query": query})
            assert resp.status_code == 400 and words in resp.json()["error"], resp.text
            assert resp.json()["next"]
        counted = viewer.post("/api/sql", json={"query": "SELECT count(*) FROM adapters"}).json()
        assert counted["rows"] == [[len(found["result"]["adapters_proposed"])]]
        # The job's proposal phase is checkpointed as a local find's is: one stored outcome per target.
        run_id = found["result"]["run_id"]
        phase = viewer.post(
            "/api/sql",
            json={"query": f"SELECT repo_id, outcome FROM find_proposals WHERE run_id = '{run_id}' ORDER BY position"},
        ).json()
        assert [r[0] for r in phase["rows"]] == found["result"]["adapters_proposed"]
        assert {r[1] for r in phase["rows"]} <= {"pass", "fail"}


def test_adapter_detail_has_spec_reasons_contract_and_previews(service, found):
    repo = found["result"]["adapters_proposed"][0]
    with service.api("viewer") as viewer:
        listed = viewer.get("/api/adapters").json()
        assert repo in {a["repo_id"] for a in listed}
        detail = viewer.get(f"/api/adapters/{repo}", params={"rows": 4}).json()
    assert detail["spec"]["source"]["repo_id"] == repo and detail["reasons"]
    assert detail["contract_result"]["passed"] is True and detail["contract_current"] is True
    assert len(detail["previews"]) == 4
    first = detail["previews"][0]
    assert first["raw"] and first["canonical"] and first["canonical"][0]["messages"][0]["role"] in ("system", "user")
    if detail["layout"] != "columns":
        assert set(first["labels"]) <= set(detail["role_map"])


def test_review_actions_record_the_tokens_user_and_staleness_shows(service, found):
    repo = found["result"]["adapters_proposed"][1]
    with service.api("reviewer") as reviewer:
        job = reviewer.post(f"/api/adapters/{repo}/test", json={"rows": 20}).json()
        assert service.wait_job(job["job_id"])["result"]["passed"] is True
        open_items = reviewer.get(f"/api/adapters/{repo}", params={"rows": 0}).json()["verdict"]["review_open"]
        if open_items:  # an open REVIEW item blocks approval until the reviewer says it was checked
            refused = reviewer.post(f"/api/adapters/{repo}/approve", json={"note": "turns line up"})
            assert refused.status_code == 400 and "open REVIEW item" in refused.json()["error"], refused.text
        body = {"note": "turns line up", "checked": open_items}
        approved = reviewer.post(f"/api/adapters/{repo}/approve", json=body).json()
        assert approved["status"] == "approved" and approved["reviewed_by"] == "rita"
        assert approved["verdict"]["approvable"] and approved["next"] == f"draftset ingest --repo {repo}"
        rows = reviewer.post(
            "/api/sql", json={"query": f"SELECT reviewed_by, note, status FROM adapters WHERE repo_id = '{repo}'"}
        ).json()["rows"]
        assert rows == [["rita", "turns line up", "approved"]]
        # A label no sampled row has is a typo: refused, the approval untouched.
        typo = reviewer.post(f"/api/adapters/{repo}/map", json={"narrator": "system"})
        assert typo.status_code == 400 and "unknown role label 'narrator'" in typo.json()["error"], typo.text
        # Mapping a label differently changes the spec: the approval goes stale, and says why.
        shown = reviewer.get(f"/api/adapters/{repo}", params={"rows": 0}).json()
        label, role = next(iter(shown["role_map"].items()))
        other = "system" if role != "system" else "user"
        mapped = reviewer.post(f"/api/adapters/{repo}/map", json={label: other}).json()
        assert mapped["status"] == "stale" and mapped["role_map"][label] == other
        stale = reviewer.get(f"/api/adapters/{repo}", params={"rows": 0}).json()
        assert stale["stale"] and "rita" in stale["stale_reason"]
        bad = reviewer.post(f"/api/adapters/{repo}/map", json={label: "wizard"})
        assert bad.status_code == 400 and "ROLE one of" in bad.json()["next"]
        rejected = reviewer.post(f"/api/adapters/{repo}/reject", json={"note": ""})
        assert rejected.status_code == 400 and "reject needs --note" in rejected.json()["error"]
        missing = reviewer.post("/api/adapters/nobody/nothing/approve", json={})
        assert missing.status_code == 404 and "no adapter" in missing.json()["error"]


def test_tokens_are_stored_only_as_hashes(service):
    raw = (service.home / "catalog.duckdb").read_bytes()
    for token in service.tokens.values():
        assert token.encode() not in raw
    with service.api("operator") as operator:
        users = operator.post("/api/sql", json={"query": "SELECT name, token_hash FROM users ORDER BY name"}).json()
    assert [u[0] for u in users["rows"]] == ["olga", "rita", "vera"]
    assert all(len(u[1]) == 64 and u[1] not in service.tokens.values() for u in users["rows"])


def test_a_page_session_needs_the_csrf_token_for_changes(service, found):
    repo = found["result"]["adapters_proposed"][0]
    with service.api(None) as browser:
        page = browser.get("/login")
        login_csrf = browser.cookies["draftset_login_csrf"]
        assert 'type="password"' in page.text and service.tokens["reviewer"] not in page.text
        assert (
            browser.post("/login", data={"token": service.tokens["reviewer"], "csrf_token": "wrong"}).status_code == 403
        )
        resp = browser.post("/login", data={"token": service.tokens["reviewer"], "csrf_token": login_csrf})
        assert resp.status_code == 303
        cookie = resp.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        assert service.tokens["reviewer"] not in cookie
        assert browser.get("/api/me").json()["name"] == "rita"  # the session works for reads
        forged = browser.post(f"/api/adapters/{repo}/reject", json={"note": "forged"})
        assert forged.status_code == 403 and "CSRF" in forged.json()["error"]
        forged_form = browser.post(f"/adapters/{repo}/reject", data={"note": "forged"})
        assert forged_form.status_code == 403


def test_ingest_jobs_pass_the_gate_count_every_row_and_need_the_operator(service, found):
    repo = found["result"]["adapters_proposed"][0]  # proposed, not approved (earlier tests only tried to)
    with service.api("reviewer") as reviewer:
        assert reviewer.post("/api/ingest", json={"repos": [repo]}).status_code == 403
    with service.api("operator") as op:
        unknown = op.post("/api/ingest", json={"plan": "no-such-plan"})
        assert unknown.status_code == 400 and "unknown plan 'no-such-plan'" in unknown.json()["error"]
        refused = service.wait_job(op.post("/api/ingest", json={"repos": [repo]}).json()["job_id"])
    assert refused["status"] == "failed" and repo in refused["error"]
    assert "is not approved" in refused["result"]["datasets"][0]["error"]  # the gate held; no shard written
    assert not (service.home / "data" / "normalized" / repo.replace("/", "__")).exists()
    with service.api("reviewer") as reviewer:
        assert reviewer.post(f"/api/adapters/{repo}/approve", json={"note": "ingest it"}).status_code == 200
    with service.api("operator") as op:
        job = service.wait_job(op.post("/api/ingest", json={"repos": [repo]}).json()["job_id"])
        assert job["status"] == "ok" and job["started_by"] == "olga", job
        (dataset,) = job["result"]["datasets"]
        counts = dataset["counts"]
        dropped = sum(v for k, v in counts.items() if k.startswith("dropped_"))
        assert counts["out"] > 0 and counts["in"] == counts["out"] + dropped + counts.get("errors", 0)
        runs = op.post(
            "/api/sql",
            json={"query": f"SELECT status FROM stage_runs WHERE stage = 'ingest' AND params LIKE '%{repo}%'"},
        ).json()["rows"]
        assert ["ok"] in runs
        again = service.wait_job(op.post("/api/ingest", json={"repos": [repo]}).json()["job_id"])
    resumed = again["result"]["datasets"][0]["counts"]  # a second run resumes by id: nothing written twice
    assert (
        resumed.get("out", 0) == 0 and sum(v for k, v in resumed.items() if k.startswith("skipped_")) == counts["out"]
    )
