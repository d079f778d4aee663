"""Generate a large synthetic Hub folder (default 2,000 dataset repos) for the find benchmark.

Names, cards and rows are drawn deterministically from small vocabularies so searches hit a
realistic mix: many near-miss repos, some relevant ones, some non-text and unlicensed ones.
"""

from __future__ import annotations

import random
from pathlib import Path

from pipeline.servers.localhub.write import write_repo

TOPICS = [
    "agent",
    "trajectories",
    "code",
    "chat",
    "math",
    "reasoning",
    "tool",
    "swe",
    "review",
    "essays",
    "instruct",
    "sharegpt",
    "hermes",
    "polyglot",
    "kimi",
    "images",
    "speech",
    "prices",
    "news",
    "poems",
]
SHAPES = ["messages", "columns", "tabular"]
LICENSES = ["mit", "apache-2.0", "cc-by-4.0", None]


def _rows(rng: random.Random, shape: str, topic: str, n: int) -> list[dict]:
    if shape == "tabular":
        return [{"x": rng.random(), "y": rng.randint(0, 9)} for _ in range(n)]
    if shape == "columns":
        return [
            {"instruction": f"{topic} task {i}: explain step {rng.randint(1, 99)}", "output": "ok " * 30}
            for i in range(n)
        ]
    return [
        {
            "messages": [
                {"role": "user", "content": f"{topic} question {i}"},
                {"role": "assistant", "content": "answer " * rng.randint(10, 80)},
            ]
        }
        for i in range(n)
    ]


def generate(root: Path, n_repos: int = 2000, rows_per_repo: int = 20, seed: int = 0) -> int:
    rng = random.Random(seed)
    for i in range(n_repos):
        topic, other = rng.sample(TOPICS, 2)
        shape = "tabular" if topic in ("prices", "images", "speech") else rng.choice(SHAPES[:2])
        card = {
            "pretty_name": f"{topic} {other} {i}",
            "language": ["en"],
            "task_categories": ["tabular-regression" if shape == "tabular" else "text-generation"],
            "x_downloads": rng.randint(0, 100_000),
        }  # the local Hub reads popularity from x_downloads
        license_ = rng.choice(LICENSES)
        if license_:
            card["license"] = license_
        rows = _rows(rng, shape, topic, rows_per_repo)
        write_repo(
            root,
            f"org{i % 97}/{topic}-{other}-{i}",
            card,
            {"data/train.jsonl": rows},
            body=f"A {topic} dataset about {other}.",
        )
    return n_repos
