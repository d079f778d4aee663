"""Mix: allocation by weights and caps, plan-driven targets, determinism under a seed, atomic rebuilds."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime

import pyarrow.parquet as pq
import pytest

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.shards import read_table
from pipeline.mix.allocate import allocate
from pipeline.mix.run import run_mix


def test_allocate_is_exact_and_respects_capacity():
    assert allocate(10, {"a": 1, "b": 1, "c": 2}, {"a": 100, "b": 100, "c": 100}) == {"a": 3, "b": 2, "c": 5}
    # b can hold 1: the rest goes to a and c in proportion to their weights.
    assert allocate(10, {"a": 1, "b": 1, "c": 2}, {"a": 100, "b": 1, "c": 100}) == {"a": 3, "b": 1, "c": 6}
    assert allocate(1000, {"a": 1, "b": 1}, {"a": 3, "b": 5}) == {"a": 3, "b": 5}
    assert allocate(5, {"a": 0, "b": 1}, {"a": 3, "b": 5}) == {"a": 0, "b": 5}
    assert allocate(0, {"a": 1}, {"a": 3}) == {"a": 0}
    for total in range(0, 40):
        shares = allocate(total, {"x": 0.2, "y": 0.5, "z": 0.3}, {"x": 4, "y": 9, "z": 30})
        assert sum(shares.values()) == min(total, 43) and shares["x"] <= 4 and shares["y"] <= 9


def _prompt(repo: str, i: int) -> str:
    """Distinct across rows and repos (no accidental near duplicates)."""
    rng = random.Random(f"{repo}/{i}")
    return " ".join(f"t{rng.randrange(10**6)}" for _ in range(12))


def _ingest(home, sources, spec: dict[str, tuple[str, int]]):
    make, write = sources
    for repo, (category, n) in spec.items():
        write(home, [make(repo, i, _prompt(repo, i), category=category) for i in range(n)])


SOURCES = {
    "chat/a": ("general chat", 30),
    "chat/b": ("general chat", 10),
    "math/c": ("math", 25),
    "code/d": ("coding", 40),
}


def _plan(home, plan_id="p1", samples=40):
    cat = Catalog(home)
    cat.upsert(
        "plans",
        [
            {
                "plan_id": plan_id,
                "run_id": "r",
                "domain": "test",
                "samples_requested": samples,
                "samples_existing": 0,
                "created_at": datetime(2026, 1, 1),
                "totals": {},
                "params": {},
            }
        ],
    )
    items = [
        ("chat/a", "general chat", 20, 20),
        ("chat/b", "general chat", 5, 5),
        ("math/c", "math", 10, 10),
        ("code/d", "coding", 15, 15),
        ("never/ingested", "coding", 5, 5),
    ]
    cat.upsert(
        "plan_items",
        [
            {
                "plan_id": plan_id,
                "repo_id": r,
                "category": c,
                "mode": "regenerate",
                "rows_to_take": take,
                "est_samples": est,
            }
            for r, c, take, est in items
        ],
    )
    return cat


def _ids(result) -> list[str]:
    return read_table([result.path], columns=["id"]).column("id").to_pylist()


def test_plan_weights_and_caps(home, sources):
    _ingest(home, sources, SOURCES | {"extra/e": ("math", 5)})  # ingested, but not in the plan
    cat = _plan(home)
    result = run_mix(cat, home, "m1")
    m = result.manifest
    assert m["plan_id"] == "p1" and m["samples_requested"] == 40 and m["samples_selected"] == 40
    assert m["stage"] == "mix" and m["run_id"] == m["mix_run_id"] and m["counts"]["out"] == 40
    assert [(u["stage"], u["run_id"]) for u in m["upstream"]] == [("dedup", m["dedup_run_id"])]  # forwarded
    # weights 25:10:15 (est_samples per ingested category) over 40 samples -> 20:8:12,
    # and inside "general chat" 20 split by the caps 20:5 -> 16:4
    assert {c: v["selected"] for c, v in m["categories"].items()} == {"general chat": 20, "math": 8, "coding": 12}
    assert {s: v["selected"] for s, v in m["sources"].items()} == {"chat/a": 16, "chat/b": 4, "math/c": 8, "code/d": 12}
    assert all(v["selected"] <= v["cap"] for v in m["sources"].values())
    assert m["missing_sources"] == ["never/ingested"] and m["unplanned_sources"] == ["extra/e"]
    table = read_table([result.path])
    assert table.num_rows == 40 and len(set(table.column("id").to_pylist())) == 40
    assert Counter(table.column("repo_id").to_pylist()) == {"chat/a": 16, "chat/b": 4, "math/c": 8, "code/d": 12}
    assert table.schema.names[:3] == ["id", "repo_id", "revision"]
    stages = cat.query("SELECT stage, status, counts FROM stage_runs ORDER BY started_at")
    assert [(s["stage"], s["status"]) for s in stages] == [("dedup", "ok"), ("mix", "ok")]
    assert json.loads(stages[1]["counts"]) == {"in": 105, "out": 40, "errors": 0, "not_selected": 65}


def test_more_than_available_is_capped_and_reported_short(home, sources):
    _ingest(home, sources, SOURCES)
    result = run_mix(_plan(home), home, "big", samples=1000)
    assert result.manifest["samples_selected"] == 50  # the sum of the caps of the ingested sources
    assert result.manifest["shortfall"] == 950


def test_deterministic_under_seed(home, sources):
    _ingest(home, sources, SOURCES)
    cat = Catalog(home)
    first, again = run_mix(cat, home, "s0", samples=30), run_mix(cat, home, "s0-again", samples=30)
    other = run_mix(cat, home, "s1", samples=30, seed=1)
    assert _ids(first) == _ids(again) and len(_ids(first)) == 30
    assert set(_ids(first)) != set(_ids(other))
    # Without a plan every ingested source is used with equal category weights.
    assert {c: v["selected"] for c, v in first.manifest["categories"].items()} == {
        "general chat": 10,
        "math": 10,
        "coding": 10,
    }


def test_rerun_is_a_noop_and_changes_need_overwrite(home, sources):
    _ingest(home, sources, SOURCES)
    cat = Catalog(home)
    first = run_mix(cat, home, "m", samples=20)
    shard = first.path / "part-00000.parquet"
    mtime = shard.stat().st_mtime_ns
    again = run_mix(cat, home, "m", samples=20)
    assert again.reused and shard.stat().st_mtime_ns == mtime
    last = cat.query("SELECT counts FROM stage_runs WHERE stage = 'mix' ORDER BY started_at DESC LIMIT 1")[0]
    assert json.loads(last["counts"])["skipped_already_built"] == 20
    with pytest.raises(DraftsetError, match="different config") as exc:
        run_mix(cat, home, "m", samples=25)
    assert "--overwrite" in exc.value.hint
    rebuilt = run_mix(cat, home, "m", samples=25, overwrite=True)
    assert pq.read_table(rebuilt.path / "part-00000.parquet").num_rows == 25
    assert not [p for p in rebuilt.path.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_mix_errors_are_actionable(home, sources):
    with pytest.raises(DraftsetError, match="no dataset has been ingested"):
        run_mix(Catalog(home), home, "m")
    _ingest(home, sources, SOURCES)
    with pytest.raises(DraftsetError, match="plan 'nope' not found"):
        run_mix(_plan(home), home, "m", plan_id="nope")
    with pytest.raises(DraftsetError, match="invalid mix name"):
        run_mix(Catalog(home), home, "../escape")


def test_cli_dedup_mix_and_errors(home, sources):
    from typer.testing import CliRunner

    from pipeline.cli.app import app

    _ingest(home, sources, SOURCES)
    runner = CliRunner()
    res = runner.invoke(app, ["dedup"])
    assert res.exit_code == 0, res.output
    assert "estimate:chars/4" in res.output and "SELECT * FROM dedup WHERE stage_run_id" in res.output
    res = runner.invoke(app, ["mix", "cli-mix", "--samples", "12", "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert "12 records written" in res.output and "code/d" in res.output
    manifest = json.loads((home / "data" / "mix" / "cli-mix" / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["samples_selected"] == 12
    res = runner.invoke(app, ["mix", "cli-mix", "--samples", "12", "--seed", "3"])
    assert "unchanged" in res.output
    res = runner.invoke(app, ["mix", "cli-mix", "--samples", "13"])
    assert res.exit_code != 0 and isinstance(res.exception, DraftsetError)
    assert "--overwrite" in res.exception.hint
    res = runner.invoke(app, ["mix", "x", "--threshold", "1.5"])
    assert res.exit_code == 2  # rejected by the option's range before anything runs


def test_ingest_picks_plan_repos_or_approved_adapters(home, sources):
    from pipeline.ingest.run import repos_to_ingest

    cat = _plan(home)
    assert repos_to_ingest(cat, "p1", None) == ["chat/a", "chat/b", "code/d", "math/c", "never/ingested"]
    assert repos_to_ingest(cat, None, ["x/y", "x/y", "a/b"]) == ["x/y", "a/b"]
    with pytest.raises(DraftsetError, match="no approved adapter"):
        repos_to_ingest(cat, None, None)
    with pytest.raises(DraftsetError, match="plan 'p9' not found"):
        repos_to_ingest(cat, "p9", None)
