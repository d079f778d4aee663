"""Relevance from content (issue 20, item 5): content signals read from rows, the verdict they give with the
card's words, the catalog columns, and the llm judge's use of the rows (FAKE scripted model replies,
labelled, for control flow only). find over the fixture Hub's relevance repos (tests/fixtures/hubgen/
repos_relevance.py), stored and shown: test_find_graph.py, beside the other checks of the shared run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from adapters.infer.detect import detect
from agents.configuration import FindConfig
from agents.content import signals
from agents.policies.llm import LLMPolicy
from agents.relevance import judge
from agents.scoring import score_candidate
from agents.state import AgentCounts, Brief
from tests.kits.find import CAPS, answer, script, scripted_llm


def _turns(*pairs: tuple[str, str]) -> dict:
    return {"messages": [{"role": role, "content": text} for role, text in pairs]}


def _counts(rows: list[dict]) -> dict[str, int]:
    return signals(rows, detect(rows))["counts"]


# -- content signals: fixed patterns over the rows' own text and structure ---------------------------------------
def test_code_is_programs_not_dna_or_medical_codes():
    program = _turns(("user", "sum a list?"), ("assistant", "def total(xs):\n    return sum(xs)\n"))
    dna = {"instruction": "Translate: ATGGCCAAATTTGGCCTGTAA", "output": "MAKFGL (stop codon TAA)"}
    icd = {"instruction": "Assign codes: type 2 diabetes", "output": "ICD-10-CM: E11.9; CPT: 99213."}
    assert _counts([program] * 3)["code"] == 3
    assert _counts([dna] * 3)["code"] == 0 and _counts([icd] * 3)["code"] == 0


def test_shell_needs_a_command_shaped_line_not_english():
    prose = _turns(("user", "where is it?"), ("assistant", "find the answer in the text, then cat it to me"))
    session = _turns(("user", "disk full"), ("assistant", "Checking.\n$ du -sh /var/log/* | sort -h"))
    assert _counts([prose] * 2)["shell"] == 0 and _counts([session] * 2)["shell"] == 2


def test_tool_calls_are_read_from_structure_and_json_text():
    structured = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "w", "arguments": "{}"}}]},
            {"role": "tool", "content": "{}"},
        ]
    }
    as_text = {"query": "weather?", "answers": json.dumps([{"name": "get_weather", "arguments": {"city": "Oslo"}}])}
    python_style = {"prompt": "weather?", "completion": '[get_weather(city="Oslo")]'}
    call_centre = _turns(("agent", "Thank you for calling."), ("customer", "I need my policy"), ("agent", "Sure."))
    assert _counts([structured])["tool_calls"] == 1
    assert _counts([as_text])["tool_calls"] == 1 and _counts([python_style])["tool_calls"] == 1
    assert _counts([call_centre])["tool_calls"] == 0


def test_tool_use_in_react_text_or_a_calls_column_counts():
    react = {"text": "Thought: look it up\nAction: search[Oslo weather]\nObservation: 4 C, rain\nAnswer: rain"}
    column = {"query": "weather in Oslo?", "call": 'get_weather(city="Oslo", days=3)'}
    assert _counts([react])["tool_calls"] == 1 and _counts([column])["tool_calls"] == 1
    assert _counts([{"text": "Action: none taken yet. The board met on Monday."}])["tool_calls"] == 0


def test_prompt_and_answer_columns_are_an_exchange_and_a_shared_preamble_is_not_the_task():
    preamble = "Below is an instruction that describes a task. Write a response. "
    rows = [{"instruction": preamble + task, "output": "Sure."} for task in ("Sum 2 and 3.", "Name a fish.", "Say hi.")]
    found = signals(rows, detect(rows))
    assert found["counts"]["exchange"] == 3 and found["counts"]["varied"] == 3
    assert found["opening"]["shared"].startswith("below is an instruction")
    same = signals(rows[:1] * 3, detect(rows[:1] * 3))
    assert same["counts"]["varied"] == 0  # one prompt three times is not a mix


def test_probe_reads_a_bounded_sample():
    rows = [_turns(("user", "x"), ("assistant", "$ ls -la /tmp"))] * 50
    found = signals(rows, detect(rows))
    assert found["rows"] == 8 and found["counts"]["shell"] == 8


# -- the verdict: card words checked against the rows ---------------------------------------------------------
def test_card_words_in_another_sense_are_off_domain_on_the_other_domains_words():
    rows = [
        _turns(
            ("agent", f"Policy {i}: your claim was approved; the deductible is 500."),
            ("customer", "will my premium rise at renewal?"),
            ("agent", "The adjuster says no; coverage stays the same."),
        )
        for i in range(8)
    ]
    v = judge("agentic", ["agent", "tool"], 0.5, signals(rows, detect(rows)))
    assert v["verdict"] == "off_domain" and v["relevance"] == 0.0
    assert "8/8 sampled rows are about insurance" in v["evidence"] and "0/8 about software" in v["evidence"]
    assert "'agent', 'tool'" in v["evidence"] and v["senses"] == {"agent": False, "tool": False}


def test_the_absence_of_a_cue_is_not_evidence_it_goes_to_review():
    rows = [_turns(("agent", f"Item {i} is active."), ("customer", "thanks"), ("agent", "bye")) for i in range(8)]
    v = judge("agentic", ["agent", "tool"], 0.5, signals(rows, detect(rows)))
    assert v["verdict"] == "review" and v["relevance"] > 0
    assert "0/8 sampled rows show tool calls or shell commands" in v["evidence"]


def test_one_incidental_line_does_not_make_a_dataset_agentic():
    rows = [{"prompt": f"Scene {i}", "completion": "INT. SAFEHOUSE - NIGHT\nThe spy waits."} for i in range(7)]
    rows.append({"prompt": "Scene 7", "completion": "The hacker types:\n$ ls -la /vault"})
    v = judge("agentic", ["agent", "tools"], 0.5, signals(rows, detect(rows)))
    assert v["verdict"] == "off_domain" and "sampled rows are about film" in v["evidence"]
    assert "shell commands 1/8" in v["evidence"]


def test_a_native_card_naming_nothing_is_not_kept():
    rows = [_turns(("user", "hi"), ("assistant", "hello"))] * 4
    assert judge("native", [], 0.0, signals(rows, detect(rows)))["verdict"] == "unmatched"


def test_a_card_naming_nothing_is_kept_on_its_rows():
    rows = [_turns(("user", f"fix {i}"), ("assistant", "$ pytest -x tests/")) for i in range(8)]
    v = judge("agentic", [], 0.0, signals(rows, detect(rows)))
    assert v["verdict"] == "on_content" and v["relevance"] == 0.5 and "shell commands 8/8" in v["evidence"]


def test_no_rows_leaves_the_card_to_decide():
    assert judge("agentic", ["agent"], 0.25, None)["verdict"] == "card_only"  # content check off
    assert judge("agentic", ["agent"], 0.25, {"rows": 0, "counts": {}, "opening": {}})["relevance"] == 0.25


def test_the_evidence_comes_from_the_rows_not_the_name(hub_url):
    """The same hit (a distractor's id, tags and card) is relevant over tool-call rows and off-domain over its
    own rows: nothing about the repo's name decides."""
    from agents.tools import HubTools

    hub = HubTools(hub_url, hub_url + "/viewer", FindConfig(), cache_dir=None)
    hit = next(h for h in hub.search("agentic", "insurance-agent") if h["repo_id"].endswith("insurance-agent-calls"))
    own = hub.inspect("agentic", hit)
    tools_hit = next(h for h in hub.search("agentic", "tool-use-multiturn"))
    swapped = {k: v for k, v in own.items() if k != "content"}  # the probe's answer goes with the rows
    swapped["configs"] = hub.inspect("agentic", tools_hit)["configs"]
    assert score_candidate("agentic", "agentic coding", hit, own, FindConfig()).status == "irrelevant"
    kept = score_candidate("agentic", "agentic coding", hit, swapped, FindConfig())
    assert kept.status == "relevant" and kept.relevance["verdict"] == "on_domain", kept.reasons
    before = score_candidate("agentic", "agentic coding", hit, own, FindConfig(content_relevance=False))
    assert before.status == "relevant" and before.relevance["verdict"] == "card_only"  # card words only


# -- llm policy: the model judges with the rows as evidence (FAKE scripted replies: control flow only) ----------
@pytest.fixture(scope="module")
def judged_pair(hub_url):
    from agents.tools import HubTools

    hub = HubTools(hub_url, hub_url + "/viewer", FindConfig(), cache_dir=None)
    out = []
    for query, repo in (("secret-agent", "secret-agent-scripts"), ("swe-agent", "swe-agent-trajectories-mini")):
        hit = next(h for h in hub.search("agentic", query) if h["repo_id"].endswith(repo))
        out.append(score_candidate("agentic", "agentic coding", hit, hub.inspect("agentic", hit), FindConfig()))
    return out


def test_llm_judge_sees_content_and_a_sample_row_and_settles_relevance_both_ways(judged_pair):
    film, swe = judged_pair
    assert film.status == "irrelevant" and swe.status == "relevant"
    seen: list[dict] = []
    replies = [answer((film.repo_id, 0.9, "scripts are fine"), (swe.repo_id, 0.05, "not agentic"))]  # FAKE
    policy = LLMPolicy(FindConfig(policy="llm"), scripted_llm(script(replies, seen)), "m", CAPS)
    brief = Brief(category="agentic", weight=0.3, domain="agentic coding")
    film2, swe2 = asyncio.run(policy.judge(brief, [film, swe], AgentCounts(category="agentic")))
    prompt = seen[0]["messages"][1]["content"]
    assert '"sample_row"' in prompt and "INT." in prompt and '"content"' in prompt and "shell" in prompt
    assert (film2.status, film2.relevance["verdict"]) == ("relevant", "on_domain")
    assert film2.relevance["evidence"].startswith("llm: relevant (scripts are fine); content: off-domain")
    assert "off_domain" not in film2.flags
    assert (swe2.status, swe2.relevance["verdict"]) == ("irrelevant", "off_domain")
    assert swe2.relevance["llm"] == {"relevance": 0.05, "reason": "not agentic"}


def test_a_catalog_from_before_the_relevance_columns_upgrades_and_its_view_shows_them(tmp_path, monkeypatch):
    """A catalog migrated up to 0030 opens with 0031 applied, and candidate_status (c.*) shows the new columns."""
    from catalog import Catalog, db

    every = db.migrations()
    monkeypatch.setattr(db, "migrations", lambda: [m for m in every if m[0] <= 30])
    old = Catalog(tmp_path)
    with old.writer() as con:
        con.execute("INSERT INTO candidates (repo_id, status) VALUES ('o/old', 'relevant')")
    monkeypatch.setattr(db, "migrations", lambda: every)
    with Catalog(tmp_path).writer() as con:
        con.execute("UPDATE candidates SET relevance = 'off_domain', relevance_evidence = 'e' WHERE repo_id = 'o/old'")
    [row] = Catalog(tmp_path).query("SELECT repo_id, status, relevance, relevance_evidence FROM candidate_status")
    assert row == {"repo_id": "o/old", "status": "relevant", "relevance": "off_domain", "relevance_evidence": "e"}


def test_the_probe_is_bounded_on_hostile_rows():
    """Text past the per-row budget, lines past the line limit and JSON nested past the decoder's limit are not
    read (and do not raise): the probe's work has a ceiling whatever a row holds."""
    late = {**{f"f{i}": "x " * 3_000 for i in range(5)}, "cmd": "$ ls -la /tmp"}  # after MAX_ROW_CHARS of filler
    long_line = {"text": "$ ls -la /tmp " + "y" * 5_000}
    nested = {"messages": "[" * 5_000 + "]" * 5_000}
    assert _counts([late])["shell"] == 0 and _counts([long_line])["shell"] == 0
    assert signals([nested], None)["rows"] == 1


# -- beyond the fixture Hub: the schema corpus's public shapes (tests/fixtures/schema_corpus) --------------------
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "schema_corpus"


def _corpus_rows(family: Path) -> tuple[dict, list[dict]]:
    meta = json.loads((family / "family.json").read_text())
    path = family / meta["files"][0] if meta.get("files") else family
    if path.suffix == ".parquet":
        rows = pq.read_table(path).slice(0, 10).to_pylist()
    elif path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines()[:10]]
    elif path.suffix == ".json":
        rows = json.loads(path.read_text())[:10]
    else:
        rows = []  # compressed, archives, loading scripts: not this test's subject
    return meta, [r for r in rows if isinstance(r, dict)]


def _truth_has_tools(meta: dict) -> bool:
    records = [r for r in meta.get("truth") or [] if isinstance(r, dict)]
    return any(
        r.get("tools") or any(m.get("tool_calls") or m.get("role") == "tool" for m in r.get("messages", []))
        for r in records
    )


def test_tool_use_in_every_public_tool_shape_is_seen_from_the_raw_rows():
    """Every corpus family whose true records carry tools (OpenAI, legacy functions, Anthropic blocks, Hermes
    tags, glaive text, pythonic calls, ReAct, SWE tool JSON/XML ...) shows tool calls or shell commands in its
    raw rows, without the adapter's help: the families were written for the schema work, not for this probe."""
    families = [f for f in sorted(CORPUS.iterdir()) if (f / "family.json").exists()]
    seen = {}
    for family in families:
        meta, rows = _corpus_rows(family)
        if rows and _truth_has_tools(meta):
            counts = signals(rows, detect(rows))["counts"]
            seen[family.name] = counts["tool_calls"] + counts["shell"]
    assert len(seen) >= 8, sorted(seen)
    assert all(seen.values()), {k: v for k, v in seen.items() if not v}


def test_every_mappable_public_shape_reads_as_a_conversation():
    """With the adapter's mapping of the rows (find's path), every corpus family the adapters map shows an
    exchange: numbered columns, utterance lists and rendered transcripts included."""
    from adapters.infer.trial import trial_records

    missing, checked = [], 0
    for family in sorted(CORPUS.iterdir()):
        if not (family / "family.json").exists():
            continue
        meta, rows = _corpus_rows(family)
        if not rows or meta.get("expect") != "map":
            continue
        d = detect(rows)
        checked += 1
        if signals(rows, d, trial_records(d, rows))["counts"]["exchange"] == 0:
            missing.append(family.name)
    assert checked >= 40 and not missing, (checked, missing)


def test_the_llm_inspect_tool_shows_the_content_counts(hub_url):
    """Under --policy llm the model's inspect_dataset result carries what the rows show beside the card."""
    from agents.policies.llm_tools import Toolbox
    from agents.tools import HubTools

    hub = HubTools(hub_url, hub_url + "/viewer", FindConfig(), cache_dir=None)
    meter = AgentCounts(category="agentic")

    async def in_thread(fn, *args):
        return fn(*args)

    box = Toolbox(hub, "agentic", meter, 4000, in_thread, lambda *a, **k: None)
    asyncio.run(box.call("search_hub", json.dumps({"query": "toolbelt"})))
    result = asyncio.run(box.call("inspect_dataset", json.dumps({"repo_id": "devlogs/toolbelt-sessions"})))
    assert '"content": {' in result and '"shell": "8/8"' in result, result[:400]
