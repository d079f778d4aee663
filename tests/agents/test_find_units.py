"""Unit tests: category weights, row inspection, scoring reasons/flags, planning arithmetic."""

from __future__ import annotations

import asyncio
import json

import pytest

from agents import inspection
from agents.categories import CATEGORIES, category_weights
from agents.configuration import Capacity, FindConfig
from agents.planning import domain_categories, headline, plan_mix, quotas
from agents.policies.heuristic import HeuristicPolicy
from agents.scoring import score_candidate
from agents.state import Brief, Candidate

CONFIG = FindConfig()


def test_agentic_coding_reweighting():
    assert len({c.key for c in CATEGORIES}) == len(CATEGORIES)
    w = category_weights("agentic coding")
    assert abs(sum(w.values()) - 1) < 1e-9
    assert w["agentic"] > w["chat"] and w["coding"] > w["writing"] and w["agentic"] == max(w.values())
    flat = category_weights("zzz")
    assert domain_categories(flat) == {"standard", "native"}  # only the base favourites
    assert {"agentic", "coding"} <= domain_categories(w) and "writing" not in domain_categories(w)


def test_hidden_state_bytes_per_token_is_kimi_figure():
    assert Capacity().hidden_state_bytes_per_token == 57_344


@pytest.mark.parametrize(
    "rows, layout, field",
    [
        (
            [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}],
            "messages",
            "conversations",
        ),
        ([{"messages": json.dumps([{"role": "user", "content": "hi"}])}], "messages", "messages"),
        ([{"instruction": "write", "response": "ok"}], "columns", "instruction"),
        ([{"price": 1.0, "rooms": 3}], "none", None),
    ],
)
def test_detect_structure(rows, layout, field):
    s = inspection.detect_structure({k: {} for k in rows[0]}, rows)
    assert (s["layout"], s["field"]) == (layout, field)


def test_sample_stats_yield_counts_only_usable_rows():
    rows = [
        {"messages": [{"role": "user", "content": "abcd"}, {"role": "assistant", "content": "12345678"}]},
        {"messages": [{"role": "user", "content": ""}]},
        {"messages": None},
        {"messages": "not json"},
    ]
    stats = inspection.sample_stats(inspection.detect_structure({}, rows), rows)
    assert stats == {"yield": 0.25, "prompt_chars": 4.0, "response_chars": 8.0}


def _hit(repo_id="o/agent-trajectories", **card):
    tags = [f"{k}:{v}" for k, vals in card.items() for v in (vals if isinstance(vals, list) else [vals])]
    return {
        "repo_id": repo_id,
        "sha": "a" * 40,
        "downloads": 1000,
        "likes": 1,
        "gated": False,
        "tags": tags,
        "card_data": card,
    }


def _facts(rows, features=None, text="", n_rows=100):
    return {
        "card_text": text,
        "card_error": None,
        "access": "ok",
        "configs": [
            {
                "config": "default",
                "split": "train",
                "num_rows": n_rows,
                "num_bytes": 10,
                "rows": rows,
                "features": features or {k: {"dtype": "string", "_type": "Value"} for k in rows[0]},
            }
        ],
    }


# An agentic row: the answer is a shell command (content evidence for the agentic category, agents/content.py).
CHAT = [
    {
        "messages": [
            {"role": "user", "content": "use the tool"},
            {"role": "assistant", "content": "$ git status --short"},
        ]
    }
] * 4


def test_score_relevant_agentic_candidate_has_reasons():
    c = score_candidate("agentic", "agentic coding", _hit(license="mit", language="en"), _facts(CHAT), CONFIG)
    assert c.status == "relevant" and c.flags == [] and c.est_yield == 1.0 and c.mode == "regenerate"
    assert any("conversation column 'messages'" in r for r in c.reasons)
    assert any(r.startswith("+") and "relevance: card matches agent" in r for r in c.reasons)
    assert c.score == pytest.approx(sum(float(r.split()[0]) for r in c.reasons), abs=0.03)


def test_score_flags_unlicensed_gated_non_english_and_native():
    hit = _hit(language="fr")
    hit["gated"] = True
    c = score_candidate("agentic", "agentic coding", hit, _facts(CHAT, text="made with moonshotai/Kimi-K2"), CONFIG)
    assert {"no_license", "gated", "non_english"} <= set(c.flags)
    assert c.mode == "native" and any("target-native" in r for r in c.reasons)
    model_col = [{**CHAT[0], "model": "moonshotai/Kimi-K2-Instruct"}] * 2
    assert score_candidate("native", "chat", _hit(license="mit"), _facts(model_col), CONFIG).mode == "native"


@pytest.mark.parametrize(
    "hit, facts, why",
    [
        (
            _hit("v/agent-images", license="mit", task_categories="image-to-text"),
            _facts([{"image": None, "caption": "a cat"}], {"image": {"_type": "Image"}, "caption": {}}),
            "image",
        ),
        (_hit("t/agent-tabular", license="mit"), _facts([{"price": 1.0, "rooms": 2}]), "numeric"),
        (_hit("e/agent-empty", license="mit"), _facts(CHAT, n_rows=0), None),
    ],
)
def test_non_text_and_empty_are_irrelevant(hit, facts, why):
    c = score_candidate("agentic", "agentic coding", hit, facts, CONFIG)
    assert c.status == "irrelevant"
    assert ("non_text" in c.flags) if why else ("empty" in c.flags)


def _cand(repo, category, score, n_rows=1000, yield_=0.5, **kw):
    return Candidate(
        repo_id=repo,
        category=category,
        score=score,
        n_rows=n_rows,
        est_yield=yield_,
        prompt_tokens=100,
        response_tokens=300,
        **kw,
    )


def test_plan_respects_share_cap_weights_and_holdings():
    cands = [
        _cand("a/1", "agentic", 0.9),
        _cand("a/2", "agentic", 0.8),
        _cand("c/1", "coding", 0.7),
        _cand("x/held", "agentic", 0.95),
        _cand("n/1", "native", 0.6, mode="native"),
        _cand("u/nolic", "coding", 0.99, flags=["no_license"]),
        _cand("g/gated", "coding", 0.99, gated=True, flags=["gated"]),
    ]
    weights = category_weights("agentic coding")
    plan = plan_mix("p", cands, {"x/held": 400}, 1000, weights, FindConfig(share_cap=0.35), has_token=False)
    by_repo = {i.repo_id: i for i in plan.items}
    assert "x/held" not in by_repo and "u/nolic" not in by_repo and "g/gated" not in by_repo
    assert plan.samples_existing == 400 and plan.existing_repos == ["x/held"]
    assert all(i.est_samples <= 350 for i in plan.items)  # 35 % share cap of 1,000
    assert plan.totals["samples_planned"] == sum(i.est_samples for i in plan.items) <= 1000
    a1 = by_repo["a/1"]
    assert a1.rows_to_take == a1.est_samples * 2  # yield 0.5
    assert a1.response_tokens == a1.est_samples * 788  # regenerate: expected answer length
    assert a1.regen_hours == pytest.approx(a1.response_tokens / 830 / 3600)
    assert a1.hidden_state_bytes == (a1.prompt_tokens + a1.response_tokens) * 57_344
    assert by_repo["n/1"].regen_hours == 0 and by_repo["n/1"].response_tokens == by_repo["n/1"].est_samples * 300


def test_the_plan_s_forecast_speaks_for_the_recipe_s_optimizer_steps_when_it_is_known():
    """FindEnv.train_steps (pipeline/train/recipes.py steps_for_tokens, from the CLI and the service) gets every
    planned and held sample's tokens; without it the sentence says it assumed the points' typical steps."""
    cands = [_cand("a/1", "agentic", 0.9), _cand("c/1", "coding", 0.7)]
    weights = category_weights("agentic coding")
    asked: list[float] = []

    def steps(tokens: float) -> int:
        asked.append(tokens)
        return 6000

    known = plan_mix("p", cands, {}, 1000, weights, FindConfig(), has_token=False, train_steps=steps)
    totals = known.totals
    per_sample = (totals["prompt_tokens"] + totals["response_tokens"]) / totals["samples_planned"]
    assert asked == [pytest.approx(1000 * per_sample)]
    assert "at this run's 6,000 optimizer steps" in totals["forecast"]
    unknown = plan_mix("p", cands, {}, 1000, weights, FindConfig(), has_token=False).totals["forecast"]
    assert "this run's steps are not known" in unknown and "this run's 6" not in unknown


def test_allocate_fills_shortfall_from_other_categories():
    cands = [_cand("a/1", "agentic", 0.9, n_rows=100, yield_=1.0), _cand("w/1", "writing", 0.2, n_rows=10_000)]
    taken = quotas(cands, 1000, category_weights("agentic coding"), cap=1000)
    assert taken == {"a/1": 100, "w/1": 900}


def test_headline_reads_hours_and_terabytes():
    totals = {"regen_hours": 55.04, "hidden_state_bytes": 9_200_000_000_000}
    assert headline(totals) == "this is 55.0 hours and 9.2 TB"


def test_heuristic_queries_expand_from_brief():
    brief = Brief(category="coding", weight=0.2, domain="agentic coding")
    queries = asyncio.run(HeuristicPolicy(CONFIG).queries(brief, meter=None))
    terms = [q.search for q in queries if q.search]
    assert terms[:2] == ["code", "coder"] and "coding" in terms
    assert any(q.tag == "task_categories:text-generation" for q in queries)


def test_hub_token_never_reaches_reprs(tmp_path):
    from agents.run import FindEnv
    from agents.tools import HubTools

    env = FindEnv(
        home=tmp_path, endpoint="http://127.0.0.1:9", viewer_base="http://127.0.0.1:9/viewer", token="hf_secret_value"
    )
    hub = HubTools(env.endpoint, env.viewer_base, CONFIG, token=env.token)
    assert "hf_secret_value" not in repr(env) + repr(vars(hub)) + repr(hub.http.headers)
    assert hub.http.headers["Authorization"] == "Bearer hf_secret_value"  # it is sent, only to the Hub
