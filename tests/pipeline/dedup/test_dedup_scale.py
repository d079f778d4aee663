"""Dedup out of core: signatures = datasketch's, decisions = the in-memory reference's (plus what union-find
links through chains), the same on 1 or 2 workers, resumable per task with counts that add up across ranks."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasketch import MinHash

from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.dedup.decide import clusters
from pipeline.dedup.minhash import shingle_hashes, signatures
from pipeline.dedup.near import NearIndex
from pipeline.dedup.run import DedupConfig, run_dedup
from pipeline.parallel import run_tasks, summed, task_counts
from pipeline.rows.keys import hash_normalized, normalize
from pipeline.targets.lengths import TokenCounter


def test_signatures_equal_datasketch_minhash_of_the_same_shingles():
    texts = [normalize(t) for t in ["A b c d", "a", "", "x y", "b a c d e f", "a b c d"]]
    sigs = signatures(texts)
    grams, owner = shingle_hashes(texts)
    for i in range(len(texts)):
        m = MinHash(num_perm=128, hashfunc=int)  # datasketch, fed our shingle hashes
        m.update_batch([int(v) for v in grams[owner == i]])
        assert (m.hashvalues == sigs[i]).all()
    assert (sigs[0] == sigs[5]).all() and not (sigs[0] == sigs[4]).all()
    assert list(np.bincount(owner, minlength=6)) == [3, 1, 0, 1, 5, 3]  # word bigrams; a short text is one


def test_union_find_roots_are_the_smallest_member():
    nodes, roots = clusters(np.array([5, 9, 2, 7]), np.array([9, 11, 7, 30]))
    assert dict(zip(nodes.tolist(), roots.tolist())) == {2: 2, 5: 5, 7: 2, 9: 5, 11: 5, 30: 2}


def _corpus(home: Path, sources, n: int = 240, seed: int = 3) -> list:
    make, write = sources
    rng = random.Random(seed)
    vocab = [f"v{i}" for i in range(3_000)]
    prompts = [" ".join(rng.choices(vocab, k=rng.randrange(30, 60))) for _ in range(n)]
    for i in rng.sample(range(40, n), 30):  # near copies of earlier prompts (one word in ~40 changed)
        words = prompts[rng.randrange(0, 40)].split()
        words[rng.randrange(1, len(words) - 1)] = "changed"
        prompts[i] = " ".join(words)
    for i in rng.sample(range(40, n), 10):  # exact copies after normalization
        prompts[i] = prompts[rng.randrange(0, 40)].upper() + "!"
    convs = [make(f"lab-{'ab'[i % 2]}/chat", i, p) for i, p in enumerate(prompts)]
    write(home, [c for c in convs if c.source.repo_id == "lab-a/chat"], rows_per_shard=30)
    write(home, [c for c in convs if c.source.repo_id == "lab-b/chat"], rows_per_shard=30)
    return convs


def _reference(convs) -> set[str]:
    """The in-memory first-come index over the same survivor order."""
    rows = sorted(convs, key=lambda c: (c.mode != "native", c.source.repo_id, c.source.row_index, c.id))
    index, first, dropped = NearIndex(0.8), set(), set()
    texts = [normalize(c.prompt_text()) for c in rows]
    for conv, text, sig in zip(rows, texts, index.signatures(texts)):
        h = hash_normalized(text)
        if h in first or index.match_or_add(conv.id, sig) is not None:
            dropped.add(conv.id)
        else:
            first.add(h)
    return dropped


def _dedup(home: Path, workers: int, out: str = "dd") -> tuple:
    counter = TokenCounter(None)
    config = DedupConfig(repos=["lab-a/chat", "lab-b/chat"], length_unit=counter.method)
    result = run_dedup(Catalog(home), home, config, home / out, counter, workers=workers)
    table = pq.read_table(result.decisions).to_pylist()
    return result, table


def test_stage_on_two_workers_decides_as_the_in_memory_reference(home, sources):
    convs = _corpus(home, sources)
    one, rows_one = _dedup(home, 1, "one")
    two, rows_two = _dedup(home, 2, "two")
    assert [(r["record_id"], r["reason"], r["duplicate_of"]) for r in rows_one] == [
        (r["record_id"], r["reason"], r["duplicate_of"]) for r in rows_two
    ]
    dropped = {r["record_id"] for r in rows_two if not r["kept"]}
    reference = _reference(convs)
    assert reference <= dropped and len(reference) >= 30
    # Union-find also drops what the first-come index keeps when it is linked only through a chain: two
    # rewordings of one original, each >= 0.8 to it but not to each other. Its recorded similarity (to the
    # survivor) says so.
    chained = [r for r in rows_two if r["record_id"] in dropped - reference]
    assert len(chained) <= 3 and all(r["reason"] == "near" and r["similarity"] < 0.8 for r in chained)
    counts = two.counts
    assert counts["in"] == len(convs) == counts["out"] + counts["dropped_near"] + counts["dropped_exact"]
    assert two.manifest["tasks"] == 4 and two.manifest["workers"] == 2 and two.manifest["shards"] == 8
    kept = {r["record_id"] for r in rows_two if r["kept"]}
    assert all(r["duplicate_of"] in kept for r in rows_two if not r["kept"])  # a duplicate points at a survivor
    assert all(r["similarity"] >= 0.8 for r in rows_two if r["reason"] == "near" and r not in chained)


def test_in_a_process_with_threads_the_workers_come_from_a_forkserver_and_decide_the_same(home, sources):
    """The service runs stages in job threads: a fork there can copy a lock another thread holds (a dedup hung on
    OpenSSL's lock inside os.fork), so pipeline/parallel.py takes a forkserver when threads are alive."""
    import threading

    import multiprocess

    _corpus(home, sources)
    _, rows_one = _dedup(home, 1, "alone")
    done: dict = {}
    busy = threading.Event()
    neighbour = threading.Thread(target=busy.wait, daemon=True)  # a thread alive across the stage, as uvicorn's
    neighbour.start()
    try:
        worker = threading.Thread(target=lambda: done.update(rows=_dedup(home, 2, "threaded")[1]))
        worker.start()
        worker.join(timeout=240)
    finally:
        busy.set()
    assert not worker.is_alive(), "the dedup stage did not end in a process with threads"
    assert multiprocess.get_start_method() == "forkserver"
    key = [(r["record_id"], r["reason"], r["duplicate_of"]) for r in rows_one]
    assert [(r["record_id"], r["reason"], r["duplicate_of"]) for r in done["rows"]] == key


class FlakyTask:
    """Rank 1 fails on the first run (a node lost mid-job); every rank counts what it did."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __call__(self, rank: int, world: int) -> dict[str, int]:
        (self.marker.parent / f"ran-{rank}").touch()
        (self.marker.parent / f"runs-{rank}").open("a").write("x")
        if rank == 1 and not self.marker.exists():
            self.marker.touch()
            time.sleep(0.5)  # the other ranks finish first
            raise RuntimeError("node lost")
        return {"rows": 10 + rank}


def test_tasks_resume_per_rank_and_counts_add_up(tmp_path):
    task = FlakyTask(tmp_path / "failed-once")
    with pytest.raises(Exception, match="node lost"):
        run_tasks(task, 3, tmp_path / "tasks", workers=2)
    with pytest.raises(DraftsetError, match="of 3 tasks left no counts .*first: rank 1"):
        task_counts(tmp_path / "tasks", 3)
    completed = {int(p.name) for p in (tmp_path / "tasks" / "completions").iterdir()}
    assert 0 in completed and 1 not in completed
    counts = run_tasks(task, 3, tmp_path / "tasks", workers=2)
    assert summed(counts) == {"rows": 33}  # every rank's counts, whichever run produced them
    assert all((tmp_path / f"runs-{r}").read_text() == "x" for r in completed)  # completed ranks not redone
    assert (tmp_path / "runs-1").read_text() == "xx"


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="ray is in the test extras (pyproject.toml)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_the_same_stage_runs_on_a_local_ray_cluster(home, sources, local_ray):
    """datatrove's Ray executor with the stage code unchanged: the same decisions as the local pool."""
    _corpus(home, sources, n=120)
    local, rows_local = _dedup(home, 2, "local")
    counter = TokenCounter(None)
    config = DedupConfig(repos=["lab-a/chat", "lab-b/chat"], length_unit=counter.method)
    on_ray = run_dedup(Catalog(home), home, config, home / "ray", counter, workers=2, executor="ray")
    rows_ray = pq.read_table(on_ray.decisions).to_pylist()
    assert [(r["record_id"], r["reason"], r["duplicate_of"]) for r in rows_ray] == [
        (r["record_id"], r["reason"], r["duplicate_of"]) for r in rows_local
    ]
    assert on_ray.manifest["executor"] == "ray" and on_ray.counts == local.counts


def test_an_interrupted_run_reuses_its_finished_keys_files(home, sources, monkeypatch):
    """The per-shard pass dies after some shards; the re-run computes only the others, same decisions."""
    from pipeline.dedup import sketch

    _corpus(home, sources, n=120)
    _, before = _dedup(home, 1, "whole")
    real, calls = sketch.SketchTask.sketch_shard, []

    def dies_after_two(self, number, *args, **kwargs):
        if len(calls) == 2:
            raise RuntimeError("killed")
        calls.append(number)
        return real(self, number, *args, **kwargs)

    monkeypatch.setattr(sketch.SketchTask, "sketch_shard", dies_after_two)
    with pytest.raises(RuntimeError, match="killed"):
        _dedup(home, 1, "again")
    second: list[int] = []

    def counted(self, number, *args, **kwargs):
        second.append(number)
        return real(self, number, *args, **kwargs)

    monkeypatch.setattr(sketch.SketchTask, "sketch_shard", counted)
    result, after = _dedup(home, 1, "again")
    assert [(r["record_id"], r["reason"]) for r in after] == [(r["record_id"], r["reason"]) for r in before]
    assert set(second).isdisjoint(calls) and len(second) == result.manifest["shards"] - len(calls)
    assert result.counts["in"] == 120 and not (home / "again" / "scratch").exists()
