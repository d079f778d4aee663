"""What draftset's own dedup would have made of the curve's rows: duplicates per size, and held-out leakage.

    python -m eval.bench.bench_real_target_curve_dedup --rows rows.npz --gguf FILE [--sizes 3000,9000,27000]

The curve bench (bench_real_target_curve) dedups the target's Magpie prompts by exact lower-cased text
only and writes its builds itself. This replays, on CPU, the project's own definition of "the same
prompt" over the same rows in the same nested order: exact duplicates by `prompt_hash` (normalized text:
case, punctuation, whitespace) and near duplicates by the dedup stage's MinHash (word bigrams, Jaccard
>= the stage's threshold), first come first kept, as dedup keeps them. Two figures matter for the curve:
how many of each size's training rows dedup would drop (its x axis counts them), and how many held-out
prompts have a near copy among the training rows (a held-out accept length measured on a prompt the draft
trained on is not held out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from eval.bench.bench_real_target_curve import load_rows, nested
from pipeline.dedup import minhash
from pipeline.dedup.config import DedupConfig
from pipeline.dedup.near import NearIndex
from pipeline.rows.keys import hash_normalized, normalize

USER, END = "<|im_start|>user\n", "<|im_end|>"


def user_prompt(text: str) -> str:
    """The user turn of a rendered ChatML prompt (the curve's rows hold one)."""
    return text.split(USER, 1)[1].split(END, 1)[0] if USER in text else text


def copies_in(queries: list[str], corpus: list[str], threshold: float, num_perm: int, ngram: int) -> list[int]:
    """Indices of `queries` with an exact or near copy in `corpus`: candidates from the dedup stage's LSH
    bands (minhash.bands), each confirmed on the whole signature, as the stage confirms its pairs."""
    b, r = minhash.bands(threshold, num_perm)
    corpus_sigs = minhash.signatures(corpus, num_perm, ngram)
    buckets: dict[tuple[int, int], list[int]] = {}
    for i, keys in enumerate(minhash.band_keys(corpus_sigs, b, r).tolist()):
        for j, key in enumerate(keys):
            buckets.setdefault((j, key), []).append(i)
    exact = {hash_normalized(t) for t in corpus}
    query_sigs = minhash.signatures(queries, num_perm, ngram)
    found = []
    for q, (text, keys) in enumerate(zip(queries, minhash.band_keys(query_sigs, b, r).tolist())):
        near = sorted({i for j, key in enumerate(keys) for i in buckets.get((j, key), [])})
        sims = minhash.similarity(corpus_sigs[near], query_sigs[q][None]).tolist() if near else []
        if hash_normalized(text) in exact or (bool(text) and max(sims, default=0.0) >= threshold):
            found.append(q)
    return found


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=Path, required=True, help="rows.npz from bench_real_target_curve")
    p.add_argument("--gguf", type=Path, required=True, help="the target's GGUF (its tokenizer decodes the rows)")
    p.add_argument("--sizes", default="3000,9000,27000")
    p.add_argument("--eval-prompts", type=int, default=16, help="held-out prompts the curve measured on")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.gguf.parent, gguf_file=a.gguf.name)
    held, rest = nested(load_rows(a.rows), 20)
    defaults = DedupConfig.model_fields

    def text(row: dict) -> str:
        prompt = row["input_ids"][: row["n_tokens"] - row["n_trainable"]]
        return normalize(user_prompt(str(tok.decode(prompt))))

    index = NearIndex(float(defaults["threshold"].default), int(defaults["num_perm"].default))
    seen: set[str] = set()
    exact = near = 0
    sizes = sorted(int(s) for s in a.sizes.split(","))
    report: dict = {"threshold": index.threshold, "sizes": {}, "train_rows": len(rest), "heldout_rows": len(held)}
    rest_texts = [text(r) for r in rest[: sizes[-1]]]
    for i, (key, sig) in enumerate(zip(rest_texts, index.signatures(rest_texts)), 1):
        h = hash_normalized(key)
        if h in seen:
            exact += 1
        elif index.match_or_add(f"t{i}", sig) is not None:
            near += 1
        seen.add(h)
        if i in sizes:
            report["sizes"][i] = {"exact": exact, "near": near, "kept": i - exact - near}
    held_texts = [text(r) for r in held]
    leaks = copies_in(held_texts, rest_texts, index.threshold, index.num_perm, index.ngram)
    report["heldout_with_a_copy_in_train"] = len(leaks)
    report["eval_prompts_with_a_copy_in_train"] = sum(1 for k in leaks if k < a.eval_prompts)
    print(json.dumps(report, indent=2))
    if a.out:
        a.out.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
