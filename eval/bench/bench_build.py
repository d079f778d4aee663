"""Benchmark: loss masks from the generation boundary (ours) vs SpecForge-style regex masks.

    .venv/bin/python -m eval.bench.bench_build [--conversations 300] [--repeats 5]

Both run on the same synthetic multi-turn conversations with the toy target's tokenizer (trained on the
built-in fallback text, so no model download). The naive baseline renders once, finds assistant spans
with a regex over the rendered text and maps characters to tokens through offsets. The table gives
median conversations/s over the repeats and how many rows the two disagree on: answers that contain
the assistant header (quoting a chat log, say) fool the regex, never the boundary.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

from pipeline.build.render import MaskBuilder
from pipeline.model.corpus import FALLBACK_ROWS
from pipeline.model.tokenizer import train_tokenizer

T = TypeVar("T")
R = TypeVar("R")

HEADER = "<|im_assistant|>assistant<|im_middle|>"
END = "<|im_end|>"


def conversations(n: int, seed: int = 0) -> list[list[dict]]:
    rng = random.Random(seed)
    texts = [t for row in FALLBACK_ROWS for t in row]
    out = []
    for i in range(n):
        msgs = [{"role": "system", "content": "You are a helpful assistant."}] if i % 3 == 0 else []
        for turn in range(rng.randint(1, 4)):
            answer = " ".join(rng.choices(texts, k=rng.randint(1, 6)))
            if i % 10 == 0 and turn == 0:  # a reply quoting a chat transcript
                answer = f"The log read: {HEADER}ok{END} and then it stopped."
            msgs += [
                {"role": "user", "content": rng.choice(texts)},
                {"role": "assistant", "content": answer, "reasoning_content": rng.choice(texts)},
            ]
        out.append(msgs)
    return out


def boundary_mask(builder: MaskBuilder, msgs: list[dict]) -> list[int]:
    turns = [j for j, m in enumerate(msgs) if m["role"] == "assistant"]
    return builder.rows(msgs, turns, per_turn=False)[0].loss_mask


def regex_mask(tokenizer: Any, msgs: list[dict]) -> list[int]:
    """SpecForge's approach: a regex from the assistant header to the end-of-turn over the rendered text."""
    text = tokenizer.apply_chat_template(msgs, tokenize=False)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = [
        (m.start(1), m.end(1)) for m in re.finditer(re.escape(HEADER) + r"([\s\S]*?(?:" + re.escape(END) + "|$))", text)
    ]
    return [int(any(s <= a and b <= e for s, e in spans)) for a, b in enc["offset_mapping"]]


def timed(fn: Callable[[T], R], items: Iterable[T]) -> tuple[float, list[R]]:
    start = time.perf_counter()
    results = [fn(item) for item in items]
    return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tokenizer = train_tokenizer((t for row in FALLBACK_ROWS for t in row), vocab_size=1000)
    builder = MaskBuilder(tokenizer, thinking=True, end_of_turn=END)
    data = conversations(args.conversations)
    ours, naive = [], []
    for _ in range(args.repeats):
        t_ours, masks_ours = timed(lambda m: boundary_mask(builder, m), data)
        t_naive, masks_naive = timed(lambda m: regex_mask(tokenizer, m), data)
        ours.append(t_ours)
        naive.append(t_naive)
    differ = sum(a != b for a, b in zip(masks_ours, masks_naive))
    table = Table(title=f"loss masks for {len(data)} multi-turn conversations (median of {args.repeats})")
    for col in ("method", "median s", "conversations/s", "rows that differ from boundary masks"):
        table.add_column(col)
    for name, times, diff in (
        ("generation boundary (draftset)", ours, "(reference)"),
        ("regex over text (naive)", naive, str(differ)),
    ):
        med = statistics.median(times)
        table.add_row(name, f"{med:.3f}", f"{len(data) / med:,.0f}", diff)
    Console().print(table)


if __name__ == "__main__":
    main()
