"""Relevance from positive evidence and discovery by content (issue 33, items 2 and 7).

An off-domain verdict needs rows about another domain; coding data without a code block (a bug-fix in prose, a
question about git, a preference pair about locks, commands inside tags) is on the domain; what neither
confirms nor refutes stays in the plan flagged for review. Search reaches repos whose ids lack every seed word
through their tags, as the Hub's `filter` does. Each test fails on the behaviour before (absence of a cue taken
as evidence; ids-only search)."""

from __future__ import annotations

import asyncio
import json

import pytest

from adapters.infer.detect import detect
from agents.configuration import FindConfig
from agents.content import signals
from agents.planning import plannable
from agents.relevance import judge
from agents.run import FindRequest, run_find
from agents.topics import row_topic
from catalog import Catalog
from pipeline.servers.localhub import server
from pipeline.servers.localhub.write import write_repo
from tests.kits.find import make_env


def _chat(*pairs: tuple[str, str]) -> dict:
    return {"messages": [{"role": r, "content": t} for r, t in pairs]}


def _verdict(category: str, rows: list[dict], matched: list[str]) -> dict:
    return judge(category, matched, 0.5, signals(rows, detect(rows)))


PROSE_FIX = [
    {
        "question": f"My Flask endpoint returns stale data after deploy {i}; the cache key ignores the query string.",
        "answer": "The decorator builds the key from the path only, so two requests with different parameters "
        "share one entry. Include the arguments in the key, or disable caching for that endpoint.",
    }
    for i in range(8)
]
GIT_CHAT = [
    _chat(
        ("user", f"After a squash merge ({i}) my feature branch still shows old commits. Should I rebase?"),
        (
            "assistant",
            "The squash created a new commit on main, so git cannot see your commits were merged; delete "
            "the local branch or reset it onto main instead of rebasing the same changes again.",
        ),
    )
    for i in range(8)
]
LOCK_PREFS = [
    {
        "prompt": f"Case {i}: is a read-write lock faster than a mutex for a cache read by many goroutines?",
        "chosen": "Usually, when reads dominate: readers share the lock, while a mutex serialises them; measure it, "
        "because writer starvation and the lock's own overhead can erase the gain under contention.",
        "rejected": "They are the same thing.",
    }
    for i in range(8)
]
OPS_CHAT = [
    _chat(
        ("user", f"Pod {i} keeps restarting with CrashLoopBackOff and the query to the database times out."),
        (
            "assistant",
            "The liveness probe fires before the app is ready; add a startup probe, then read the "
            "container logs of the previous run and check the index on the column the query filters on.",
        ),
    )
    for i in range(8)
]
TAGGED = [
    _chat(
        ("user", f"Ticket {i}: the build fails on a fresh clone."),
        ("assistant", "Checking the working tree first. <run>git status</run>"),
        ("user", "M poetry.lock"),
        ("assistant", "Reinstalling. <run>poetry install</run>"),
    )
    for i in range(8)
]
LETTINGS = [
    _chat(
        ("user", f"Is the two-bedroom flat on King's Road ({i}) still available to rent?"),
        (
            "assistant",
            "Yes, the landlord accepts a twelve-month tenancy; the deposit is five weeks' rent and "
            "viewings are on Thursday. The balcony faces the garden.",
        ),
    )
    for i in range(8)
]


@pytest.mark.parametrize(
    ("rows", "category", "matched"),
    [
        (PROSE_FIX, "coding", ["code"]),
        (PROSE_FIX, "review", ["bug", "fix"]),
        (GIT_CHAT, "coding", ["code"]),
        (LOCK_PREFS, "coding", ["code", "coding"]),
        (GIT_CHAT, "agentic", ["agent", "tool"]),
        (OPS_CHAT, "agentic", ["agent"]),
    ],
    ids=["prose-fix/coding", "prose-fix/review", "git-chat/coding", "lock-prefs/coding", "git-chat/agentic", "ops"],
)
def test_coding_data_without_a_code_block_is_on_topic(rows, category, matched):
    v = _verdict(category, rows, matched)
    assert v["verdict"] == "on_topic", v["evidence"]  # before: off_domain, "0/8 sampled rows show code"
    assert v["relevance"] > 0.5 and "sampled rows are about software" in v["evidence"]


def test_commands_inside_tags_are_shell_commands():
    v = _verdict("agentic", TAGGED, ["agent"])
    assert signals(TAGGED, detect(TAGGED))["counts"]["shell"] == 8
    assert v["verdict"] == "on_domain" and "shell commands 8/8" in v["evidence"]


@pytest.mark.parametrize("category", ["agentic", "chat", "coding"])
def test_another_domain_is_off_domain_with_its_words(category):
    v = _verdict(category, LETTINGS, ["agent", "chat"])
    assert v["verdict"] == "off_domain", v["evidence"]  # chat: before, kept on "a conversation 8/8"
    assert "8/8 sampled rows are about property" in v["evidence"] and "landlord" in v["evidence"]


def test_tool_calls_about_another_domain_are_still_tool_use():
    rows = [
        {**row, "tools": json.dumps([{"name": "book_viewing", "parameters": {"type": "object"}}])} for row in LETTINGS
    ]
    assert _verdict("agentic", rows, ["agent"])["verdict"] == "on_domain"


def test_a_word_with_two_senses_decides_nothing():
    assert row_topic("Please return the order and keep the checkout receipt.")[0] != "software"
    assert row_topic("Run git checkout and return to the previous commit.")[0] == "software"


def test_unclear_rows_stay_in_the_plan_flagged_for_review(tmp_path):
    from agents.scoring import score_candidate

    rows = [_chat(("user", f"Hello number {i}"), ("assistant", "Hi, how are you?")) for i in range(8)]
    v = _verdict("agentic", rows, ["agent"])
    assert v["verdict"] == "review" and "0/8 sampled rows show tool calls or shell commands" in v["evidence"]
    facts = {
        "card_text": "Agent logs.",
        "access": "ok",
        "configs": [
            {"config": "default", "split": "train", "num_rows": 800, "num_bytes": 1, "features": {}, "rows": rows}
        ],
    }
    hit = {
        "repo_id": "o/agent-logs",
        "sha": "s",
        "downloads": 5,
        "likes": 0,
        "gated": False,
        "tags": [],
        "card_data": {"license": "mit"},
    }
    c = score_candidate("agentic", "agentic coding", hit, facts, FindConfig())
    assert c.status == "relevant" and "relevance_review" in c.flags and c.relevance["verdict"] == "review"
    assert plannable(c, {}, has_token=False)


def test_a_domain_no_lexicon_names_is_unclear_not_off_domain():
    rows = [
        _chat(("user", f"Why does Mars look red ({i})?"), ("assistant", "Iron oxide in its dust.")) for i in range(8)
    ]
    assert _verdict("coding", rows, ["code"])["verdict"] == "review"


def test_target_native_data_is_not_judged_by_its_topic():
    assert _verdict("native", LETTINGS, ["kimi"])["verdict"] == "on_domain"


# -- discovery by content: a repo whose id has no seed word is found through its tags ---------------------------
@pytest.fixture()
def content_hub(tmp_path):
    root = tmp_path / "hub"
    write_repo(
        root,
        "lumen-labs/atlas-ember-7",  # no category's seed word in the id
        {
            "license": "mit",
            "language": ["en"],
            "task_categories": ["question-answering"],
            "tags": ["debugging", "software-engineering"],
            "x_downloads": 10,
        },
        {"data/train.jsonl": PROSE_FIX * 3},
        body="Developers' questions about failing web services, answered in prose.",
    )
    running = server.serve_in_thread(root, host="127.0.0.1", port=0)
    yield running.url
    running.stop()


def test_a_repo_whose_id_lacks_the_seed_words_is_found_by_its_tags(content_hub, tmp_path):
    asyncio.run(run_find(make_env(content_hub, tmp_path), FindRequest("agentic coding", 1000, FindConfig())))
    rows = Catalog(tmp_path).query("SELECT repo_id, status, relevance FROM candidate_status")
    assert {r["repo_id"] for r in rows} == {"lumen-labs/atlas-ember-7"}  # before: never searched for, never seen
    assert all(r["status"] in ("relevant", "planned") for r in rows), rows


def test_a_repo_with_only_a_task_category_and_a_card_is_found(tmp_path):
    root = tmp_path / "hub"
    write_repo(
        root,
        "basalt-labs/pebble-granite-3",  # no seed word, no tags: a task category and the card's text
        {"license": "mit", "language": ["en"], "task_categories": ["question-answering"], "x_downloads": 3},
        {"data/train.jsonl": PROSE_FIX * 3},
        body="Why a web service fails, and how to fix the bug: developers' questions answered in prose.",
    )
    running = server.serve_in_thread(root, host="127.0.0.1", port=0)
    try:
        asyncio.run(run_find(make_env(running.url, tmp_path), FindRequest("agentic coding", 1000, FindConfig())))
    finally:
        running.stop()
    rows = Catalog(tmp_path).query("SELECT repo_id, status FROM candidate_status")
    assert [r["repo_id"] for r in rows] == ["basalt-labs/pebble-granite-3"] * len(rows) and rows
    assert all(r["status"] in ("relevant", "planned") for r in rows), rows


def test_listing_hits_carry_the_card_text(content_hub):
    from agents.tools import HubTools

    hub = HubTools(content_hub, content_hub + "/viewer", FindConfig(), cache_dir=None)
    (hit,) = hub.search("review", tag="debugging")
    assert "answered in prose" in hit["description"]


def test_find_samples_and_counts_the_training_config_not_the_cards_evaluation_set():
    from agents.scoring import score_candidate
    from agents.tools import _preferred

    def config(name: str, n: int) -> dict:
        return {"config": name, "split": "train", "num_rows": n, "num_bytes": n, "features": {}, "rows": []}

    configs = [config("arena", 9000), config("chats", 300)]
    assert _preferred(configs, {"arena"})["config"] == "chats"  # before: the first config's train split
    facts = {"card_text": "", "access": "ok", "configs": configs, "evaluation_configs": {"arena": "card"}}
    hit = {"repo_id": "o/r", "sha": "s", "downloads": 1, "likes": 0, "gated": False, "tags": [], "card_data": {}}
    assert score_candidate("chat", "agentic coding", hit, facts, FindConfig()).n_rows == 300  # before: 9000


def test_xml_style_calls_and_parameter_tags_are_tool_use_and_commands():
    call = "I will list the tests.\n<function=execute_bash>\n<parameter=command>git log</parameter>\n</function>"
    rows = [_chat(("user", f"Ticket {i}: flaky test"), ("assistant", call)) for i in range(8)]
    counts = signals(rows, detect(rows))["counts"]
    assert counts["tool_calls"] == 8 and counts["shell"] == 8  # before: 0 and 0, the command sat in tags


MIXED_GENERAL = [  # a general instruction set: each row about some other domain, none of them dominating
    _chat(
        ("user", "Which deductible should I pick for my home insurance premium and claims history?"),
        ("assistant", "A higher deductible lowers the premium if claims are rare."),
    ),
    _chat(
        ("user", "How many tablespoons of flour go into this pancake recipe with two eggs?"),
        ("assistant", "Use eight tablespoons of flour and a cup of milk for the batter."),
    ),
    _chat(
        ("user", "The realtor says the letting agent wants a deposit before the viewing of the flat."),
        ("assistant", "Ask the letting agent for the tenancy terms before paying any deposit."),
    ),
    _chat(
        ("user", "My puppy keeps chewing the leash; how do I train the dog to walk calmly?"),
        ("assistant", "Reward the puppy with treats when the dog walks without pulling the leash."),
    ),
]


@pytest.mark.parametrize("category", ["coding", "agentic"])
def test_rows_spread_over_other_domains_are_off_domain_with_each_named(category):
    found = _verdict(category, MIXED_GENERAL, ["code"])
    assert found["verdict"] == "off_domain", found["evidence"]
    assert "about other domains" in found["evidence"] and "0/4 about software" in found["evidence"], found["evidence"]
