"""Mix: the plan's per-source quotas taken as they are, shortfall passed on, determinism under a seed, atomic rebuilds."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime

import pytest

from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.quota import allocate, take_quotas
from catalog.shards import read_table
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


def test_plan_quotas_scaled_to_n_and_missing_sources_passed_on(home, sources):
    _ingest(home, sources, SOURCES | {"extra/e": ("math", 5)})  # ingested, but not in the plan
    cat = _plan(home)
    result = run_mix(cat, home, "m1")
    m = result.manifest
    assert m["plan_id"] == "p1" and m["samples_requested"] == 40 and m["samples_selected"] == 40
    assert m["stage"] == "mix" and m["run_id"] == m["mix_run_id"] and m["counts"]["out"] == 40
    assert [(u["stage"], u["run_id"]) for u in m["upstream"]] == [("dedup", m["dedup_run_id"])]  # forwarded
    # Quotas 20:5:10:15:5 (never/ingested has none of its 5) scaled to the 40 asked for -> 14:4:7:11:4; the
    # 4 never/ingested cannot give go to the others by quota 20:5:10:15 -> 16:4:8:12 (the figures of
    # the old category-weight allocation over these sources).
    picked = {s: v["selected"] for s, v in m["sources"].items()}
    assert picked == {"chat/a": 16, "chat/b": 4, "math/c": 8, "code/d": 12, "never/ingested": 0}
    assert {s: v["target"] for s, v in m["sources"].items()} == {
        "chat/a": 14,
        "chat/b": 4,
        "math/c": 7,
        "code/d": 11,
        "never/ingested": 4,
    }
    assert m["sources"]["never/ingested"] | {"revision": None} == {
        "category": "coding",
        "candidates": 0,
        "quota": 5,
        "target": 4,
        "selected": 0,
        "shortfall": 4,
        "revision": None,
        "ingested": 0,
        "dedup_dropped": 0,
    }
    assert m["quota_shortfall"] == 4 and m["redistributed"] == 4
    assert {c: v["selected"] for c, v in m["categories"].items()} == {"general chat": 20, "math": 8, "coding": 12}
    assert m["missing_sources"] == ["never/ingested"] and m["unplanned_sources"] == ["extra/e"]
    table = read_table([result.path])
    assert table.num_rows == 40 and len(set(table.column("id").to_pylist())) == 40
    assert Counter(table.column("repo_id").to_pylist()) == {"chat/a": 16, "chat/b": 4, "math/c": 8, "code/d": 12}
    assert table.schema.names[:3] == ["id", "repo_id", "revision"]
    stages = cat.query("SELECT stage, status, counts FROM stage_runs ORDER BY started_at")
    assert [(s["stage"], s["status"]) for s in stages] == [("dedup", "ok"), ("mix", "ok")]
    assert json.loads(stages[1]["counts"]) == {"in": 105, "out": 40, "errors": 0, "not_selected": 65}


def test_plan_quotas_come_out_exactly_when_rows_allow(home, sources):
    _ingest(home, sources, SOURCES)
    cat = _plan(home, samples=1000)
    with cat.writer() as con:
        con.execute("DELETE FROM plan_items WHERE repo_id = 'never/ingested'")
        con.execute("UPDATE plan_items SET est_samples = 7 WHERE repo_id = 'chat/b'")
    m = run_mix(cat, home, "exact").manifest
    # N defaults to the quotas' sum (52 < the 1,000 asked): every source gives exactly its quota.
    assert m["samples_requested"] == 52 and m["samples_selected"] == 52
    assert {s: (v["quota"], v["selected"], v["shortfall"]) for s, v in m["sources"].items()} == {
        "chat/a": (20, 20, 0),
        "chat/b": (7, 7, 0),
        "math/c": (10, 10, 0),
        "code/d": (15, 15, 0),
    }
    assert m["quota_shortfall"] == 0 and m["redistributed"] == 0 and m["shortfall"] == 0


def test_dedup_shortfall_is_taken_from_the_others_by_quota(home, sources):
    make, write = sources
    _ingest(home, sources, {"chat/a": ("general chat", 30), "math/c": ("math", 25), "code/d": ("coding", 40)})
    # chat/b: 10 rows, but 8 of them repeat chat/a's prompts: 2 survive dedup against a quota of 5.
    write(
        home,
        [make("chat/b", i, _prompt("chat/a", i), category="general chat") for i in range(8)]
        + [make("chat/b", i, _prompt("chat/b", i), category="general chat") for i in range(8, 10)],
    )
    cat = _plan(home)
    with cat.writer() as con:
        con.execute("DELETE FROM plan_items WHERE repo_id = 'never/ingested'")
        con.execute("UPDATE plans SET samples_requested = 50")
    m = run_mix(cat, home, "short").manifest
    src = m["sources"]
    assert src["chat/b"]["candidates"] == 2 and src["chat/b"]["dedup_dropped"] == 8
    assert (src["chat/b"]["quota"], src["chat/b"]["selected"], src["chat/b"]["shortfall"]) == (5, 2, 3)
    # The 3 missing go to chat/a, math/c, code/d in proportion 20:10:15 (1.33, 0.67, 1.0 -> 1, 1, 1).
    assert {s: v["selected"] for s, v in src.items()} == {"chat/a": 21, "chat/b": 2, "math/c": 11, "code/d": 16}
    assert m["samples_selected"] == 50 and m["quota_shortfall"] == 3 and m["redistributed"] == 3


def test_take_quotas_is_exact_and_passes_shortfall_on():
    assert take_quotas({"a": 20, "b": 5}, {"a": 100, "b": 100}) == ({"a": 20, "b": 5}, {"a": 20, "b": 5})
    assert take_quotas({"a": 20, "b": 5, "c": 10}, {"a": 100, "b": 1, "c": 100})[1] == {"a": 23, "b": 1, "c": 11}
    assert take_quotas({"a": 2, "b": 1}, {"a": 1, "b": 1}) == ({"a": 2, "b": 1}, {"a": 1, "b": 1})
    target, taken = take_quotas({"a": 3, "b": 1}, {"a": 100, "b": 100}, total=8)
    assert target == taken == {"a": 6, "b": 2}
    for total in range(0, 60):
        target, taken = take_quotas({"x": 7, "y": 2, "z": 0, "w": 11}, {"x": 3, "y": 50, "z": 9, "w": 12}, total)
        assert sum(target.values()) == total and sum(taken.values()) == min(total, 65)
        assert taken["z"] == 0 or sum(taken.values()) == min(total, 65)


def test_allocate_fills_tiers_in_rank_order():
    caps = {"best": 4, "next": 10, "last": 10}
    rank = {"best": 0, "next": 1, "last": 2}
    assert allocate(12, dict.fromkeys(caps, 1.0), caps, rank) == {"best": 4, "next": 8, "last": 0}
    assert allocate(30, dict.fromkeys(caps, 1.0), caps, rank) == {"best": 4, "next": 10, "last": 10}
    # one tier = plain water-filling by weight
    assert allocate(12, dict.fromkeys(caps, 1.0), caps) == {"best": 4, "next": 4, "last": 4}


def test_more_than_available_takes_every_row_and_reports_short(home, sources):
    _ingest(home, sources, SOURCES)
    result = run_mix(_plan(home), home, "big", samples=1000)
    assert result.manifest["samples_selected"] == 105  # every row of the planned sources
    assert result.manifest["shortfall"] == 895


def test_explicit_weights_without_a_plan(home, sources):
    _ingest(home, sources, SOURCES)
    cat = _plan(home)  # a plan exists, but explicit weights mix every ingested source instead
    m = run_mix(cat, home, "w", samples=30, weights={"general chat": 2, "math": 1, "coding": 0}).manifest
    assert m["plan_id"] is None
    assert {c: v["selected"] for c, v in m["categories"].items()} == {"general chat": 20, "math": 10, "coding": 0}
    assert all(v["quota"] is None for v in m["sources"].values())
    with pytest.raises(DraftsetError, match="not both"):
        run_mix(cat, home, "w2", plan_id="p1", weights={"math": 1})


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
    assert read_table([rebuilt.path]).num_rows == 25
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
    res = runner.invoke(app, ["mix", "by-weight", "--weight", "math=1", "--samples", "5"])
    assert res.exit_code == 0, res.output
    assert (
        json.loads((home / "data" / "mix" / "by-weight" / "manifest.json").read_text())["sources"]["math/c"]["selected"]
        == 5
    )
    for bad in ("math", "math=-1", "=2", "math=nan", "math=inf"):
        assert runner.invoke(app, ["mix", "y", "--weight", bad]).exit_code == 2


def test_ingest_picks_plan_repos_or_approved_adapters(home, sources):
    from pipeline.ingest.run import repos_to_ingest

    cat = _plan(home)
    assert repos_to_ingest(cat, "p1", None) == ["chat/a", "chat/b", "code/d", "math/c", "never/ingested"]
    assert repos_to_ingest(cat, None, ["x/y", "x/y", "a/b"]) == ["x/y", "a/b"]
    with pytest.raises(DraftsetError, match="no approved adapter"):
        repos_to_ingest(cat, None, None)
    with pytest.raises(DraftsetError, match="plan 'p9' not found"):
        repos_to_ingest(cat, "p9", None)


def test_figures_reconcile_and_name_their_reference(home, sources):
    """Quotas 55 scaled to the 40 asked for; never/ingested is 4 short, passed on and taken up by the others."""
    from typer.testing import CliRunner

    from pipeline.cli.app import app
    from pipeline.mix.figures import mix_figures

    _ingest(home, sources, SOURCES)
    _plan(home)
    res = CliRunner().invoke(app, ["mix", "fig"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    manifest = json.loads((home / "data" / "mix" / "fig" / "manifest.json").read_text())
    f = mix_figures(manifest)
    assert (f.quota_total, f.target, f.selected, f.passed_on, f.taken_up, f.unmet) == (55, 40, 40, 4, 4, 0)
    line = "plan quotas 55 scaled to target 40 · selected 40 of 40 · 4 short at 1 source(s), passed on: 4 taken up"
    assert line + " by others, 0 unmet" in " ".join(res.output.split())
    # Per source: quota, target, selected, short, received, in the table the user reads.
    row = next(r for r in res.output.splitlines() if "never/ingested" in r)
    assert [c.strip() for c in row.split("│")[5:10]] == ["5", "4", "0", "4", "-"]
    manifest["sources"]["chat/a"]["selected"] -= 1  # a manifest whose figures do not add up is refused
    with pytest.raises(DraftsetError, match="do not reconcile"):
        mix_figures(manifest)
