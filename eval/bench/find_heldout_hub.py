"""Held-out relevance hubs for find's benchmark (eval/bench/find_relevance.py --heldout-seeds): a small Hub folder
per seed, with labels, built from families no fixture names (rows: eval/bench/find_heldout_coding.py and find_heldout_elsewhere.py).

Per seed: VARIANTS repos of each on-domain family (coding data without a code block or a shell line) and of
each off-domain family (other work under the domain's words), plus FILLER unlabelled repos that compete for
the same listings (translations, news summaries). Ids, cards, tags, sizes and popularity are drawn from the
seed: about half the on-domain repos get an id with no category's seed word in it (a neutral project name),
so only their tags, task categories and card text can lead a search to them. Labels are the bench's ground
truth, never read by find.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from agents.categories import CATEGORIES
from eval.bench import find_heldout_coding, find_heldout_elsewhere
from pipeline.servers.localhub.write import write_repo

VARIANTS = 3
FILLER = 30
ROWS = 24
SEEDS = tuple(sorted({q for c in CATEGORIES for q in c.seed_queries}))

ORGS = ["lumen", "northwind", "kestrel", "basalt", "quill", "harbor", "vireo", "tessel", "ombra", "fjord", "pallas"]
NEUTRAL = ["atlas", "ember", "meridian", "lattice", "sprout", "cobalt", "granite", "willow", "nimbus", "pebble"]
# Per family: words for a named id (one carries a category seed), the card's tags and task categories, and the
# card's sentence. Off-domain cards use the domain's words in their own sense, as real ones do.
FAMILY_CARDS: dict[str, dict[str, Any]] = {
    "prose_bugfix": {
        "seeded": ["debug-qa", "code-fixes", "bugfix-answers"],
        "tags": ["code", "debugging", "software-engineering"],
        "tasks": ["question-answering", "text-generation"],
        "about": "Developers describe a failing program; answers explain the cause and the fix in plain words.",
    },
    "tool_chat": {
        "seeded": ["devtools-chat", "git-chat", "build-chat"],
        "tags": ["code", "git", "developer-tools", "conversational"],
        "tasks": ["text-generation"],
        "about": "Multi-turn conversations about version control and build systems.",
    },
    "tagged_episode": {
        "seeded": ["swe-episodes", "agent-runs", "repo-agent-logs"],
        "tags": ["agents", "software-engineering", "trajectories"],
        "tasks": ["text-generation"],
        "about": "Episodes of an assistant fixing repositories; it writes commands inside tags and the "
        "environment answers.",
    },
    "concurrency_pair": {
        "seeded": ["code-prefs", "coder-dpo", "concurrency-instruct"],
        "tags": ["code", "dpo", "preference", "concurrency"],
        "tasks": ["text-generation"],
        "about": "Preference pairs about threads, locks and async programming: a chosen and a rejected answer.",
    },
    "review_prose": {
        "seeded": ["review-notes", "code-review-qa", "pr-review"],
        "tags": ["code", "code-review"],
        "tasks": ["text-generation"],
        "about": "Pull requests summarised in a sentence and what a reviewer should check.",
    },
    "estate_chat": {
        "seeded": ["estate-agent-chat", "property-assistant-chat", "realty-agent-dialog"],
        "tags": ["agent", "chat", "real-estate", "assistant"],
        "tasks": ["text-generation"],
        "about": "Chats between estate agents and buyers: our agents use the listing tool to answer.",
    },
    "insurance_qa": {
        "seeded": ["insurance-agent-instruct", "claims-tool-qa", "policy-agent-sft"],
        "tags": ["agent", "insurance", "instruction"],
        "tasks": ["text-generation"],
        "about": "Instructions for insurance agents answering claims questions with the policy tool.",
    },
    "recipe": {
        "seeded": ["recipe-instruct", "cooking-instructions", "kitchen-code-instruct"],
        "tags": ["cooking", "instruction", "step-by-step"],
        "tasks": ["text-generation"],
        "about": "Step-by-step cooking instructions; a recipe is the code of a dish.",
    },
    "pet_chat": {
        "seeded": ["pet-assistant-chat", "vet-chat", "petcare-conversations"],
        "tags": ["chat", "assistant", "pets"],
        "tasks": ["text-generation"],
        "about": "An assistant answers pet owners' questions.",
    },
    "travel_booking": {
        "seeded": ["travel-agent-tool", "booking-agent-chat", "trip-assistant-dialog"],
        "tags": ["agent", "tool", "travel", "assistant"],
        "tasks": ["text-generation"],
        "about": "A travel agent books hotels and flights with its booking tool.",
    },
}


def seedless(repo_id: str) -> bool:
    """No category's seed query is a substring of the id: a search by seed words cannot find it."""
    low = repo_id.lower()
    return not any(s in low for s in SEEDS)


def _neutral_id(rng: random.Random, taken: set[str]) -> str:
    while True:
        rid = f"{rng.choice(ORGS)}-labs/{rng.choice(NEUTRAL)}-{rng.choice(NEUTRAL)}-{rng.randint(1, 99)}"
        if seedless(rid) and rid not in taken:
            return rid


def _card(rng: random.Random, family: str, name: str) -> dict[str, Any]:
    spec = FAMILY_CARDS[family]
    return {
        "pretty_name": name.replace("-", " ").title(),
        "license": rng.choice(["mit", "apache-2.0", "cc-by-4.0"]),
        "language": ["en"],
        "task_categories": list(spec["tasks"]),
        "tags": list(spec["tags"]),
        "size_categories": ["n<1K"],
        "x_downloads": rng.randint(50, 40_000),
        "x_likes": rng.randint(0, 200),
    }


def _filler(rng: random.Random, i: int) -> tuple[str, dict[str, Any], list[dict[str, Any]], str]:
    """Unlabelled competition for the same listings: translations and news summaries."""
    if i % 2:
        rows = [{"en": f"The weather is {w} today.", "de": f"Das Wetter ist heute {w}."} for w in ("fine", "grey") * 6]
        return f"{rng.choice(ORGS)}-nlp/parallel-{i}", {"task_categories": ["translation"]}, rows, "Sentence pairs."
    rows = [
        {"article": f"The council met on day {d} and approved the budget for the new bridge.", "summary": "Budget ok."}
        for d in range(12)
    ]
    return f"{rng.choice(ORGS)}-news/digest-{i}", {"task_categories": ["summarization"]}, rows, "News summaries."


def generate(root: Path, seed: int) -> dict[str, dict[str, Any]]:
    """Write one held-out hub under root; return its labels: repo_id → {relevant, family, seedless}."""
    rng = random.Random(f"find-heldout-{seed}")
    labels: dict[str, dict[str, Any]] = {}
    for relevant, texts in ((True, find_heldout_coding), (False, find_heldout_elsewhere)):
        for family, make in texts.FAMILIES.items():
            for v in range(VARIANTS):
                named = FAMILY_CARDS[family]["seeded"][v]
                if relevant and rng.random() < 0.5:
                    repo_id = _neutral_id(rng, set(labels))
                else:
                    repo_id = f"{rng.choice(ORGS)}-{rng.choice(NEUTRAL)}/{named}"
                card = _card(rng, family, repo_id.split("/")[1])
                style = make if rng.random() < 0.5 else texts.STYLES[family]  # the seed picks the wording too
                rows = [style(rng, i) for i in range(ROWS)]
                body = f"# {card['pretty_name']}\n\n{FAMILY_CARDS[family]['about']}"
                write_repo(root, repo_id, card, {"data/train.jsonl": rows}, body=body)
                labels[repo_id] = {"relevant": relevant, "family": family, "seedless": seedless(repo_id)}
    for i in range(FILLER):
        repo_id, extra, rows, body = _filler(rng, i)
        card = {"license": "cc-by-4.0", "language": ["en"], "x_downloads": rng.randint(50, 40_000), **extra}
        write_repo(root, repo_id, card, {"data/train.jsonl": rows}, body=body)
        labels[repo_id] = {"relevant": None, "family": "filler", "seedless": seedless(repo_id)}
    return labels
