"""A small hub built in a temp folder: one repo per shape the local Hub must serve."""

from __future__ import annotations

from pathlib import Path

from pipeline.servers.localhub.write import write_repo

CHAT = [
    {"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]}
    for i in range(30)
]


def build(root: Path) -> Path:
    write_repo(
        root,
        "acme/chat-parquet",
        {
            "license": "mit",
            "task_categories": ["text-generation"],
            "language": ["en"],
            "pretty_name": "Acme chat",
            "tags": ["chat", "sft"],
            "x_downloads": 500,
            "x_likes": 7,
            "configs": [
                {
                    "config_name": "default",
                    "data_files": [
                        {"split": "train_sft", "path": "data/train_sft-*.parquet"},
                        {"split": "test_sft", "path": "data/test_sft-*.parquet"},
                    ],
                }
            ],
        },
        {"data/train_sft-00000.parquet": CHAT[:20], "data/test_sft-00000.parquet": CHAT[20:]},
        body="# Acme chat\n\nMulti-turn chat for SFT, with splits train_sft and test_sft.",
    )
    write_repo(
        root,
        "acme/multi-config",
        {
            "license": "apache-2.0",
            "task_categories": ["question-answering"],
            "language": ["en", "fr"],
            "x_downloads": 50,
            "x_likes": 70,
            "configs": [
                {"config_name": "code", "data_files": "code/*.jsonl"},
                {"config_name": "math", "data_files": [{"split": "train", "path": "math/train.jsonl"}]},
            ],
        },
        {
            "code/part-0.jsonl": [{"q": "sort a list", "a": "sorted(x)"}] * 5,
            "math/train.jsonl": [{"q": "1+1", "a": "2"}] * 3,
        },
    )
    write_repo(
        root,
        "beta/qa-csv",
        {
            "license": "cc-by-4.0",
            "task_categories": ["question-answering"],
            "language": ["en"],
            "x_downloads": 5000,
            "x_likes": 1,
        },
        {"train.csv": [{"question": f"q{i}", "answer": f"a{i}"} for i in range(12)]},
    )
    write_repo(
        root,
        "beta/sharegpt-array",
        {"license": "apache-2.0", "x_downloads": 10},
        {
            "sharegpt.json": [
                {
                    "id": str(i),
                    "conversations": [{"from": "human", "value": f"hi {i}"}, {"from": "gpt", "value": "hello"}],
                }
                for i in range(8)
            ]
        },
    )
    write_repo(
        root,
        "gated-co/secret-logs",
        {"license": "mit", "gated": True, "x_downloads": 1},
        {"data/train.jsonl": CHAT[:4]},
    )
    write_repo(
        root,
        "broken/malformed",
        {"license": "mit"},
        {"data/train.jsonl": b'{"messages": [{"role": "user", "content": "ok"}]}\n{not json\n'},
    )
    write_repo(root, "broken/bad-card", {}, {"data/train.jsonl": CHAT[:2]})
    (root / "broken/bad-card/README.md").write_text("---\nlicense: [unclosed\n---\nbody\n")
    return root
