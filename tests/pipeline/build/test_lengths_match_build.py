"""The lengths mix and the report measure are the token counts build produces for the same turns.

Template tokens aside: build's rows also hold the chat template's markers (role headers, the generation
prompt, the end-of-turn token), a fixed number per single-turn row, so for every row
    len(input_ids) - sum(loss_mask) == context tokens + P   and   sum(loss_mask) == response tokens + R
with the same P and R for all rows. The tokenizer file here carries truncation 128 and fixed padding 128
(as the toy target's once did, issue 16): counting must ignore both, and every text is longer than 128.
"""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq

from catalog.db import Catalog
from catalog.home import Home
from catalog.shards import RECORD_SCHEMA, ParquetShardWriter
from eval.report.data import load_report_data
from pipeline.build.run import run_build
from pipeline.rows.codec import to_row
from pipeline.target.lengths import TokenCounter


def _truncating_copy(toy_dir, tmp_path):
    from tokenizers import Tokenizer

    model = tmp_path / "truncating-target"
    shutil.copytree(toy_dir, model)
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.enable_truncation(max_length=128)
    tok.enable_padding(length=128, pad_token="<|pad|>", pad_id=tok.token_to_id("<|pad|>") or 0)
    tok.save(str(model / "tokenizer.json"))
    saved = json.loads((model / "tokenizer.json").read_text())
    assert saved["truncation"]["max_length"] == 128 and saved["padding"] is not None
    return model


def test_report_and_mix_lengths_equal_build_token_counts(home, toy_dir, conversation, tmp_path):
    model = _truncating_copy(toy_dir, tmp_path)
    convs = [
        conversation(
            f"c-{i}",
            [
                ("user", " ".join(f"question{i} part{j}" for j in range(40 + 15 * i))),
                ("assistant", " ".join(f"answer{i} piece{j}" for j in range(30 + 20 * i))),
            ],
        )
        for i in range(4)
    ]
    mix = Home(home).mix("m1")
    with ParquetShardWriter(mix, RECORD_SCHEMA) as writer:
        writer.write_many(to_row(c) for c in convs)
    (mix / "manifest.json").write_text(json.dumps({"sources": {}}))

    report = load_report_data(home, "m1", tokenizer=model)
    mix_lengths = TokenCounter(model).count_many([c.context_text() for c in convs])  # dedup/mix's length filter
    assert report.prompt_tokens == mix_lengths
    assert min(report.prompt_tokens + report.response_tokens) > 128  # clipped counts would all read 128

    result = run_build(home, "m1", model_dir=model, catalog=Catalog(home), max_length=8192, draft_vocab_size=50)
    built = {r["id"]: r for r in pq.read_table(result.out_dir / "rows-00000.parquet").to_pylist()}
    prompt_overhead, response_overhead = set(), set()
    for conv, prompt, response in zip(convs, report.prompt_tokens, report.response_tokens, strict=True):
        row = built[f"{conv.id}#t1"]
        trained = sum(row["loss_mask"])
        prompt_overhead.add(len(row["input_ids"]) - trained - prompt)
        response_overhead.add(trained - response)
    assert len(prompt_overhead) == 1 and 0 < prompt_overhead.pop() < 16
    assert len(response_overhead) == 1 and 0 < response_overhead.pop() < 16
    assert "turned off for counting" in (TokenCounter(model).note or "")
