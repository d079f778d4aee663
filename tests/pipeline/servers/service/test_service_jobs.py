"""A job record keeps its find run's id from the moment it is queued, and a service that stops marks its
unfinished jobs interrupted with the line that resumes them."""

from __future__ import annotations

import threading

from catalog import Catalog
from pipeline.servers.service.jobs import Jobs


def test_a_stopped_service_records_how_to_resume_its_find(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.own()  # as the service does: one instance for the job threads and the requests
    jobs = Jobs(catalog, workers=1)
    release = threading.Event()
    job = jobs.submit("find", {"domain": "x", "run_id": "find-20261201-1-abc"}, "olga", lambda j: release.wait(30))
    stored = catalog.query("SELECT params FROM service_jobs WHERE job_id = ?", [job.job_id])[0]
    assert "find-20261201-1-abc" in stored["params"]  # in the record while it runs, not only when it ends
    jobs.shutdown()
    row = catalog.query("SELECT status, error FROM service_jobs WHERE job_id = ?", [job.job_id])[0]
    assert row["status"] == "interrupted"
    assert row["error"].endswith("resume it: draftset find --resume find-20261201-1-abc")
    assert job.hint == "draftset find --resume find-20261201-1-abc"
    release.set()
    catalog.release()


def test_a_job_left_running_by_a_killed_service_says_how_to_resume_at_the_next_start(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.migrate()
    catalog.upsert(
        "service_jobs",
        [{"job_id": "find-1", "kind": "find", "params": {"run_id": "find-r1"}, "status": "running"}],
    )
    Jobs(catalog, workers=1).shutdown()  # the next service start
    row = catalog.query("SELECT status, error FROM service_jobs WHERE job_id = 'find-1'")[0]
    assert row["status"] == "interrupted" and row["error"].endswith("draftset find --resume find-r1")
