"""A synthetic normalized corpus for the scale benchmarks, with planted near duplicates as ground truth.

Rows are real canonical records (`Conversation` → `to_row`, as ingest writes them) in the shapes of the
fixture families: single-turn instructions (alpaca-like, regenerate), multi-turn chats with a follow-up
(sharegpt-like), target-native chats with a system prompt, and agentic rows with a tool call and its
result. Prompts are 8-200 words drawn Zipf-like from a 50K-word vocabulary (lengths log-normal, as real
prompts are), so two independent prompts practically never share 80% of their word bigrams.

`planted` share of the rows are near duplicates of an earlier row of any source: the same prompt with
one word in 40 replaced, of prompts of 30 words or more (bigram Jaccard 0.87-0.95, the kind of
rewording dedup must catch at threshold 0.8). `planted.json`
maps each original's id to its copies' ids: the ground truth for recall and precision.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

from adapters.records import Conversation, FunctionCall, Message, Source, ToolCall, record_id
from catalog.home import Home
from catalog.io import write_json_atomic
from catalog.shards import ParquetShardWriter
from pipeline.rows.codec import to_row

FAMILIES = {  # repo → (mode, category, shape)
    "synth/alpaca-like": ("regenerate", "general chat", "single"),
    "synth/sharegpt-like": ("regenerate", "general chat", "multi"),
    "synth/native-chat": ("native", "general chat", "system"),
    "synth/agentic": ("native", "agentic coding", "tool"),
}
VOCAB = [f"w{i}" for i in range(50_000)]
_CUM = list(itertools.accumulate(1.0 / (i + 1) ** 0.9 for i in range(len(VOCAB))))


def _prompt(rng: random.Random) -> list[str]:
    n = min(200, max(8, int(rng.lognormvariate(math.log(40), 0.6))))
    return rng.choices(VOCAB, cum_weights=_CUM, k=n)


def _reworded(words: list[str], rng: random.Random) -> list[str]:
    out = list(words)
    for _ in range(max(1, len(words) // 40)):
        out[rng.randrange(1, len(out) - 1)] = f"x{rng.randrange(10**9)}"
    return out


def _conversation(repo: str, row: int, prompt: str, rng: random.Random) -> Conversation:
    mode, category, shape = FAMILIES[repo]
    answer = Message(role="assistant", content="An answer of a few words.")
    user = Message(role="user", content=prompt)
    if shape == "single":
        messages = [user, answer]
    elif shape == "multi":
        messages = [user, answer, Message(role="user", content="and then?"), answer]
    elif shape == "system":
        messages = [Message(role="system", content="You are a helpful assistant."), user, answer]
    else:
        call = ToolCall(id=f"c{row}", function=FunctionCall(name="run", arguments='{"cmd": "ls"}'))
        messages = [
            user,
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content="a.py b.py", tool_call_id=call.id, name="run"),
            answer,
        ]
    return Conversation(
        id=record_id(repo, "default", "train", row),
        source=Source(repo_id=repo, revision="b" * 40, config="default", split="train", row_index=row),
        category=category,
        mode=mode,  # type: ignore[arg-type]  # FAMILIES holds only 'native' and 'regenerate'
        messages=messages,
    )


def build(home: Path, rows: int, planted: float = 0.10, seed: int = 0, rows_per_shard: int = 10_000) -> Path:
    """Write `rows` records over the four families under `home`; returns planted.json's path (reused when
    a corpus of this size and seed is already there)."""
    truth = Path(home) / "planted.json"
    if truth.is_file() and json.loads(truth.read_text()).get("rows") == rows:
        return truth
    rng = random.Random(seed)
    repos = list(FAMILIES)
    writers = {r: ParquetShardWriter(Home(home).normalized(r), rows_per_shard=rows_per_shard) for r in repos}
    next_row = dict.fromkeys(repos, 0)
    earlier: list[tuple[str, list[str]]] = []  # a bounded reservoir of (id, words) to copy from
    groups: dict[str, list[str]] = {}
    for _ in range(rows):
        repo = rng.choice(repos)
        row = next_row[repo]
        next_row[repo] += 1
        if earlier and rng.random() < planted:
            original, words = rng.choice(earlier)
            words = _reworded(words, rng)
        else:
            original, words = None, _prompt(rng)
        conv = _conversation(repo, row, " ".join(words), rng)
        writers[repo].write(to_row(conv))
        if original is not None:
            groups.setdefault(original, []).append(conv.id)
        elif len(words) >= 30:  # one word changed in 30 keeps bigram Jaccard >= 0.87; shorter would be borderline
            if len(earlier) < 50_000:
                earlier.append((conv.id, words))
            else:
                earlier[rng.randrange(len(earlier))] = (conv.id, words)
    for w in writers.values():
        w.flush()
    write_json_atomic(truth, {"rows": rows, "seed": seed, "planted": planted, "groups": groups})
    return truth


def scores(truth: Path, dropped: set[str]) -> dict[str, float]:
    """Recall and precision of the dropped ids against the planted groups (original + its copies): a group
    of k rows should lose k-1, whichever survives; a drop outside any planted group is a false positive."""
    groups = json.loads(Path(truth).read_text())["groups"]
    expected = found = 0
    for original, copies in groups.items():
        members = {original, *copies}
        expected += len(members) - 1
        found += min(len(members & dropped), len(members) - 1)
    return {
        "recall": found / expected if expected else 1.0,
        "precision": found / len(dropped) if dropped else 1.0,
        "planted": expected,
        "dropped": len(dropped),
    }
