"""The schema scoreboard holds its level: every public schema family of the corpus is mapped right or refused
by its expected name, none is silently wrong, and find keeps every in-domain family an adapter can map."""

from __future__ import annotations

import json
import random
import zlib

import pytest

from eval.bench.schema_scoreboard import DEFAULT_CORPUS, report, run
from tests.fixtures.schemas.make_corpus import BUILDERS


@pytest.fixture(scope="module")
def summary():
    return report(run(DEFAULT_CORPUS))


def test_at_least_forty_families_and_the_corpus_matches_its_generator():
    assert len(BUILDERS) >= 40
    for build in BUILDERS:
        fam = build(random.Random(zlib.crc32(build.__name__.encode())))
        meta = json.loads((DEFAULT_CORPUS / fam.name / "family.json").read_text())
        assert (meta["expect"], meta["truth"]) == (fam.expect, json.loads(json.dumps(fam.truth, default=str))), (
            f"{fam.name}: regenerate with python -m tests.fixtures.schemas.make_corpus"
        )


def test_every_family_right_or_refused_by_name_none_silently_wrong(summary):
    bad = [
        (f["family"], f["outcome"], f["detail"])
        for f in summary["families"]
        if f["outcome"] not in ("right", "refused-as-expected")
    ]
    assert bad == []
    assert summary["counts"]["silently-wrong"] == 0 and summary["counts"]["refused-wrongly"] == 0
    refusals = {f["family"] for f in summary["families"] if f["outcome"] == "refused-as-expected"}
    assert {"llava-instruct", "pretraining-txt", "c4-lone-text", "unsupported-archive"} <= refusals


def _missed(summary) -> set[str]:
    return {
        f["family"] for f in summary["families"] if f["relevant"] and f["expect"] == "map" and not f["found_relevant"]
    }


def test_discovery_keeps_every_mappable_in_domain_family(summary):
    """Recall only. Precision is not measured here: every family's rows come from one software-prose generator
    (tests/fixtures/schemas), so a family labelled off-domain by its source (dolly, alpaca) still has rows about
    software, and relevance judges rows by what they are about (agents/relevance.py). Off-domain kept is
    measured where rows differ by domain: eval/bench/find_relevance.py --heldout-seeds and
    tests/agents/test_find_positive_evidence.py."""
    assert _missed(summary) == set()
    assert "text-agent-bash-tag-sharegpt" not in _missed(summary)  # commands inline in tags (#33 item 2)


def test_proposal_is_fast(summary):
    assert summary["slowest_s"] < 3.0
