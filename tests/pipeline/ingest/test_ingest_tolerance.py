"""Ingest's bad-row threshold against a real local Hub: a dataset whose rows fail per-record checks past its
spec's max_bad_fraction fails with one line (its shards kept, held back from mix), one within it passes with
the drops counted, and raising the threshold in the spec resumes the same shards by id."""

from __future__ import annotations

import json
import random
from collections.abc import Collection

import pytest
from typer.testing import CliRunner

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.shards import existing_ids, shard_paths
from catalog.untrusted import suggested_commands
from pipeline.cli.app import app
from pipeline.ingest.fanout import ingest
from pipeline.ingest.run import ingest_dataset
from pipeline.ingest.tolerance import HELD_BACK, OverThreshold
from pipeline.mix.run import run_mix
from tests.kits.adapters import approve_on_hub
from tests.kits.jsonl_hub import write_jsonl_repo


def _prompt(repo: str, i: int) -> str:
    rng = random.Random(f"{repo}/{i}")  # distinct words per row: no two rows are near duplicates for mix's dedup
    return "please explain " + " ".join(f"w{rng.randrange(10**6)}" for _ in range(10))


def _good(repo: str, i: int) -> str:
    return json.dumps(
        {"messages": [{"role": "user", "content": _prompt(repo, i)}, {"role": "assistant", "content": "ok"}]}
    )


def _markup(repo: str, i: int) -> str:  # a user turn with ChatML left in it: the `markup` check
    turns = [{"role": "user", "content": _prompt(repo, i) + " <|im_end|>"}, {"role": "assistant", "content": "ok"}]
    return json.dumps({"messages": turns})


def _opens_with_answer(repo: str, i: int) -> str:  # an assistant turn answering nothing: `role_sequence`
    turns = [{"role": "assistant", "content": "hello there"}, {"role": "user", "content": _prompt(repo, i)}]
    return json.dumps({"messages": turns})


def _lines(repo: str, n: int, markup: Collection[int], sequence: Collection[int] = ()) -> list[str]:
    return [
        _markup(repo, i) if i in markup else _opens_with_answer(repo, i) if i in sequence else _good(repo, i)
        for i in range(n)
    ]


@pytest.fixture()
def tolerance_hub(tmp_path):
    from pipeline.servers.localhub.server import serve_in_thread

    root = tmp_path / "hub"
    # 6 of 20 rows (30%) fail a check: 4 markup, 2 role_sequence
    write_jsonl_repo(root, "lab/thirty", _lines("lab/thirty", 20, markup={1, 5, 9, 13}, sequence={3, 17}))
    write_jsonl_repo(root, "lab/fine", _lines("lab/fine", 200, markup={42}))  # 1 of 200 rows: 0.5%
    running = serve_in_thread(root, host="127.0.0.1", port=0)
    yield root, running.url
    running.stop()


def _adds_up(counts: dict[str, int]) -> bool:
    """in = out + dropped by reason + skipped (one record per row here)."""
    rest = sum(v for k, v in counts.items() if k.startswith(("dropped_", "skipped_")))
    return counts["in"] == counts["out"] + rest


def test_past_the_threshold_fails_in_one_line_keeps_the_shards_and_resumes_once_raised(home, tolerance_hub):
    _, url = tolerance_hub
    cat = Catalog(home)
    approve_on_hub(cat, url, "lab/thirty", "threshold test")
    out = Home(home).normalized("lab/thirty")
    with pytest.raises(OverThreshold) as failed:
        ingest_dataset(cat, home, "lab/thirty", endpoint=url)
    line = str(failed.value)
    assert line == (
        "ingest of lab/thirty: 6 of 20 rows (30.0%) failed a per-record check, over its max_bad_fraction of 1.0% "
        f"(markup 4, role_sequence 2); quarantine: {out / 'quarantine.jsonl'}"
    )
    hint = failed.value.hint or ""
    assert suggested_commands(hint) == [
        "draftset adapters edit lab/thirty",
        "draftset ingest --repo lab/thirty --fresh",
        "draftset adapters edit lab/thirty",
        "draftset ingest --repo lab/thirty",
    ]
    assert "raise max_bad_fraction" in hint and "14 records" in hint
    counts = failed.value.counts
    assert (counts["in"], counts["out"], counts["dropped_check_markup"], counts["dropped_check_role_sequence"]) == (
        20,
        14,
        4,
        2,
    )
    assert _adds_up(counts)
    # what was written stays, complete and atomic; the reasons are in the quarantine, row by row
    assert len(existing_ids(out)) == 14 and not list(out.glob(".*.parquet*"))
    quarantine = [json.loads(x) for x in (out / "quarantine.jsonl").read_text().splitlines()]
    assert sorted((q["row_index"], q["reason"]) for q in quarantine) == [
        (1, "check_markup"),
        (3, "check_role_sequence"),
        (5, "check_markup"),
        (9, "check_markup"),
        (13, "check_markup"),
        (17, "check_role_sequence"),
    ]
    held = json.loads((out / HELD_BACK).read_text())
    assert held["checks"] == {"markup": 4, "role_sequence": 2} and held["max_bad_fraction"] == 0.01
    assert not (out / "manifest.json").exists()  # not a completed run: a later top-up does not skip its rows
    (run,) = cat.query("SELECT status, error, counts FROM stage_runs WHERE stage = 'ingest'")
    assert run["status"] == "failed" and "6 of 20 rows (30.0%)" in run["error"]

    # a person accepts the loss: the threshold raised in the spec, with its reason, and approved again
    approve_on_hub(cat, url, "lab/thirty", "threshold raised", max_bad_fraction=0.35, reasons={"max_bad_fraction": "x"})
    shards = [p.name for p in shard_paths(out)]
    again = ingest_dataset(cat, home, "lab/thirty", endpoint=url)
    assert again.counts["skipped_already_written"] == 14 and again.counts["out"] == 0
    assert again.counts["dropped_check_markup"] == 4 and _adds_up(again.counts)
    assert [p.name for p in shard_paths(out)] == shards  # resumed by id: nothing rebuilt, nothing written twice
    assert not (out / HELD_BACK).exists()
    runs = cat.query("SELECT status FROM stage_runs WHERE stage = 'ingest' ORDER BY started_at")
    assert [r["status"] for r in runs] == ["failed", "ok"]


def test_within_the_threshold_passes_with_the_drops_counted_and_older_shards_resume(home, tolerance_hub):
    _, url = tolerance_hub
    cat = Catalog(home)
    approve_on_hub(cat, url, "lab/fine", "threshold test")
    result = ingest_dataset(cat, home, "lab/fine", endpoint=url)
    assert {k: v for k, v in result.counts.items() if v} == {"in": 200, "out": 199, "dropped_check_markup": 1}
    out = Home(home).normalized("lab/fine")
    assert not (out / HELD_BACK).exists() and (out / "manifest.json").exists()
    (entry,) = [json.loads(x) for x in (out / "quarantine.jsonl").read_text().splitlines()]
    assert entry["row_index"] == 42 and entry["reason"] == "check_markup" and entry["field"] == "<record>"
    # shards written before the records' hash was the resume key resume; another adapter still needs --fresh
    config = Home(home).normalized("lab/fine") / "config.json"
    recorded = json.loads(config.read_text())
    assert recorded["compat"]["records_hash"] == recorded["spec_hash"]  # a spec at the default thresholds
    recorded["compat"] = {"spec_hash": recorded["spec_hash"], "revision": recorded["revision"]}
    config.write_text(json.dumps(recorded))  # as an ingest before records_hash left it
    assert ingest_dataset(cat, home, "lab/fine", endpoint=url).counts["skipped_already_written"] == 199
    approve_on_hub(cat, url, "lab/fine", "another mapping", mode="native")
    with pytest.raises(DraftsetError, match="holds shards from adapter spec") as exc:
        ingest_dataset(cat, home, "lab/fine", endpoint=url)
    assert "--fresh" in (exc.value.hint or "")


def test_several_datasets_the_others_go_on_the_cli_exits_nonzero_and_mix_holds_it_back(
    home, tolerance_hub, monkeypatch
):
    _, url = tolerance_hub
    cat = Catalog(home)
    for repo in ("lab/thirty", "lab/fine"):
        approve_on_hub(cat, url, repo, "threshold test")
    by_repo = {r.repo_id: r for r in ingest(cat, home, ["lab/thirty", "lab/fine"], endpoint=url)}
    assert by_repo["lab/fine"].error is None and by_repo["lab/fine"].counts["out"] == 199
    failed = by_repo["lab/thirty"]
    assert "30.0%" in (failed.error or "") and failed.counts["out"] == 14 and _adds_up(failed.counts)

    monkeypatch.setenv("HF_ENDPOINT", url)
    from pipeline.cli import common

    common.settings.cache_clear()
    res = CliRunner().invoke(app, ["ingest", "--repo", "lab/thirty", "--repo", "lab/fine"], catch_exceptions=True)
    assert res.exit_code != 0 and isinstance(res.exception, DraftsetError)
    assert "lab/thirty" in str(res.exception) and "lab/fine" not in str(res.exception)
    shown = " ".join(res.output.split())
    assert "6 of 20 rows (30.0%) failed a per-record check" in shown and "next:" in shown
    assert "Its 14 records written are kept" in shown  # a resumed run that fails again counts what is there

    deduped = CliRunner().invoke(app, ["dedup"], catch_exceptions=True)  # counts what a mix would dedup
    assert deduped.exit_code == 0, deduped.output
    assert "held back by ingest's bad-row threshold, left out: lab/thirty" in " ".join(deduped.output.split())
    assert Catalog(home).query("SELECT DISTINCT repo_id FROM dedup") == [{"repo_id": "lab/fine"}]

    mixed = run_mix(cat, home, "m").manifest  # no plan: every ingested dataset that passed
    assert set(mixed["sources"]) == {"lab/fine"} and mixed["samples_selected"] == 199
    assert mixed["held_back_sources"]["lab/thirty"].startswith("ingest of lab/thirty: 6 of 20 rows")
    approve_on_hub(cat, url, "lab/thirty", "threshold raised", max_bad_fraction=0.35)
    assert ingest_dataset(cat, home, "lab/thirty", endpoint=url).counts["skipped_already_written"] == 14
    with pytest.raises(DraftsetError, match="different config"):  # made without lab/thirty: another mix
        run_mix(cat, home, "m")
    mixed = run_mix(cat, home, "m", overwrite=True).manifest
    assert set(mixed["sources"]) == {"lab/fine", "lab/thirty"} and mixed["held_back_sources"] == {}
    assert mixed["samples_selected"] == 199 + 14


def test_a_planned_dataset_held_back_passes_its_quota_on_and_is_named(home, sources):
    """With a plan, a held-back source keeps its quota like a missing one (passed on to the others); a mix made
    while it was held back is not taken for the one made after it passes (same plan, same sources)."""
    from datetime import datetime

    make, write = sources
    for repo, category, n in (("chat/a", "general chat", 30), ("math/c", "math", 25)):
        write(home, [make(repo, i, _prompt(repo, i), category=category) for i in range(n)])
    folder = Home(home).normalized("math/c")  # as ingest leaves a dataset past its threshold
    (folder / HELD_BACK).write_text(json.dumps({"error": "ingest of math/c: 9 of 25 rows (36.0%) failed ..."}))
    cat = Catalog(home)
    plan = {"plan_id": "p1", "run_id": "r", "domain": "d", "samples_requested": 30, "samples_existing": 0}
    cat.upsert("plans", [plan | {"created_at": datetime(2026, 1, 1), "totals": {}, "params": {}}])
    items = [("chat/a", "general chat", 20), ("math/c", "math", 10)]
    cat.upsert(
        "plan_items",
        [
            {"plan_id": "p1", "repo_id": r, "category": c, "mode": "regenerate", "rows_to_take": q, "est_samples": q}
            for r, c, q in items
        ],
    )
    m = run_mix(cat, home, "p").manifest
    assert {s: v["selected"] for s, v in m["sources"].items()} == {"chat/a": 30, "math/c": 0}
    assert m["sources"]["math/c"]["target"] == 10 and m["sources"]["math/c"]["shortfall"] == 10
    assert m["held_back_sources"] == {"math/c": "ingest of math/c: 9 of 25 rows (36.0%) failed ..."}
    assert m["missing_sources"] == [] and m["config"]["held_back"] == ["math/c"]
    (folder / HELD_BACK).unlink()  # a later ingest passed
    with pytest.raises(DraftsetError, match="different config"):
        run_mix(cat, home, "p")
    m = run_mix(cat, home, "p", overwrite=True).manifest
    assert {s: v["selected"] for s, v in m["sources"].items()} == {"chat/a": 20, "math/c": 10}
