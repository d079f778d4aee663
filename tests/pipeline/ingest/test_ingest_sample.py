"""Ingest reads what the plan needs: a row-hash sample of quota x oversample, exact counts, top-up."""

from __future__ import annotations

import random

import pytest

from adapters.read.source import RawRow
from catalog.shards import existing_ids
from pipeline.ingest.run import IngestConfig, IngestStage
from pipeline.ingest.sample import RowSample, for_source, sample_key
from tests.kits.adapters import make_spec

N = 1_200


def _turns(i: int) -> dict:
    return {"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "a"}]}


class LocalIngest(IngestStage):
    """The real stage over rows from a list (the Hub reader is tested in test_ingest.py)."""

    order: list[int] = list(range(N))

    def rows(self):
        return (RawRow(i, _turns(i)) for i in self.order)


def _run(tmp_path, rows_to_take, *, n_rows=N, order=None, oversample=3.0, folder="out"):
    spec = make_spec(repo_id="lab/big", revision="b" * 40, role_map={"user": "user", "assistant": "assistant"})
    config = IngestConfig.for_spec(spec).model_copy(update={"oversample": oversample})
    stage = LocalIngest(
        config,
        tmp_path / folder,
        None,
        spec=spec,
        endpoint="",
        token=None,
        fresh=False,
        progress=None,
        rows_to_take=rows_to_take,
        n_rows=n_rows,
    )
    if order is not None:
        stage.order = order
    result = stage.run()
    return result, {r for r in existing_ids(tmp_path / folder)}


def _sampled_rows(rate: float) -> set[int]:
    return {i for i in range(N) if sample_key(0, "lab/big", "default", "train", i) < rate}


def test_row_hash_sample_is_exact_order_independent_and_counted(tmp_path):
    result, ids = _run(tmp_path, 100)  # target 300 of 1,200 rows: rate 0.25
    expected = _sampled_rows(0.25)
    counts = result.counts
    assert 200 < len(expected) < 400  # the rate, not the first rows
    assert counts["out"] == len(ids) == len(expected)
    assert counts["in"] == N == counts["out"] + counts["skipped_not_sampled"]
    assert result.manifest["sample"] == {
        "kind": "row_hash",
        "seed": 0,
        "rate": 0.25,
        "target": 300,
        "available": N,
        "taken": len(expected),
    }
    # The same rows whatever order the source streams them in.
    shuffled = list(range(N))
    random.Random(7).shuffle(shuffled)
    _, ids_shuffled = _run(tmp_path, 100, order=shuffled, folder="shuffled")
    assert ids_shuffled == ids


def test_top_up_maps_only_the_new_band(tmp_path):
    first, ids_before = _run(tmp_path, 100)
    second, ids_after = _run(tmp_path, 200)  # rate 0.25 -> 0.5
    counts = second.counts
    old, new = _sampled_rows(0.25), _sampled_rows(0.5)
    assert counts["skipped_already_ingested"] == len(old)  # never parsed again
    assert counts["out"] == len(new) - len(old) and len(ids_after) == len(new)
    assert counts["in"] == N == counts["out"] + counts["skipped_already_ingested"] + counts["skipped_not_sampled"]
    assert ids_before < ids_after and second.manifest["sample"]["taken"] == len(new)
    # A fresh ingest at the larger quota takes exactly the same rows.
    _, fresh = _run(tmp_path, 200, folder="fresh")
    assert fresh == ids_after


def test_unknown_size_takes_the_first_rows_and_stops(tmp_path):
    result, ids = _run(tmp_path, 10, n_rows=None)
    assert result.counts["in"] == 30 and len(ids) == 30  # the stream stopped at the target
    assert result.manifest["sample"]["kind"] == "first_rows"


def test_all_reads_everything(tmp_path):
    result, ids = _run(tmp_path, None)
    assert result.counts["in"] == result.counts["out"] == len(ids) == N
    assert result.manifest["sample"]["kind"] == "all"


@pytest.mark.parametrize("previous", [None, {"kind": "row_hash", "seed": 1, "rate": 0.5, "taken": 9}])
def test_an_earlier_sample_at_another_seed_is_not_trusted(previous):
    sample = for_source(100, N, 2.0, 0, previous)
    assert sample == RowSample(200, N, 0, 0.0, 0) and sample.rate == pytest.approx(200 / N)
