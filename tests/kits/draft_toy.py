"""A tiny random Llama target and built rows for it, made in-test, and the toy pipeline over them (target ->
build -> capture -> train -> export) that the capture, train, checks and specdecode tests share once per
session (the `toy` fixture of tests/conftest.py). Rows follow the build stage's format: rows-*.parquet,
manifest.json, vocab.safetensors. DRAFTSET_TEST_DEVICE=cuda runs capture and training on the GPU."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from pipeline.stage import field_default
from pipeline.stage.config import field_flag
from pipeline.train.config import TrainConfig as _TrainConfig
from pipeline.train.recipes import RECIPE_FIELDS

VOCAB, HIDDEN, LAYERS = 384, 64, 8
# Every recipe setting at TrainConfig's plain value (what `train` used before it took the target's recipe,
# pipeline/train/recipes.py): the toy runs were tuned under them, so they give each one explicitly, never leaving
# a warm-up of 200 steps or the EAGLE-3.1 norms to a recipe measured on a real target. A test's own values go over.
PLAIN = {name: field_default(_TrainConfig, name) for name in RECIPE_FIELDS}


def _flags(values: dict) -> list[str]:
    flags: list[str] = []
    for name, value in values.items():
        on, _, off = field_flag(_TrainConfig, name).partition("/")
        flags += ([on] if value else [off]) if isinstance(value, bool) else [on, str(value)]
    return flags


def plain_config(**values: object) -> _TrainConfig:
    """A TrainConfig of PLAIN under the test's own `values` (they win)."""
    return _TrainConfig(**{**PLAIN, **values})


# PLAIN as `python -m pipeline.train` flags: put them first, so a test's own --epochs etc. after them win (argparse
# keeps the last).
PLAIN_FLAGS = _flags(PLAIN)


DEVICE = os.environ.get("DRAFTSET_TEST_DEVICE", "cpu")  # =cuda runs capture/train on the GPU
TEMPLATE = "{% for m in messages %}<|im_{{ m.role }}|>{{ m.content }}<|im_end|>{% endfor %}"


def make_target(model_dir: Path, seed: int = 0) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.2,
        tie_word_embeddings=False,
    )
    LlamaForCausalLM(cfg).save_pretrained(model_dir)
    (model_dir / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    return model_dir


def make_build(
    build_dir: Path,
    n_rows: int = 48,
    length: int = 40,
    draft_vocab_size: int = 256,
    seed: int = 1,
    vocab_size: int = VOCAB,
    bad_rows: list[dict] | None = None,
) -> Path:
    """Zipf-distributed token rows (prompt: first 8 tokens, mask 0) + the draft vocabulary over them."""
    g = torch.Generator().manual_seed(seed)
    weights = 1.0 / torch.arange(1, VOCAB + 1, dtype=torch.float) ** 0.7
    rows = []
    for i in range(n_rows):
        n = length - (i % 7)
        ids = torch.multinomial(weights, n, replacement=True, generator=g).tolist()
        rows.append(
            {
                "id": f"row{i:04d}",
                "conversation_id": f"c{i}",
                "input_ids": ids,
                "loss_mask": [0] * 8 + [1] * (n - 8),
                "n_tokens": n,
                "n_trainable": n - 8,
            }
        )
    build_dir.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("conversation_id", pa.string()),
            ("input_ids", pa.list_(pa.int32())),
            ("loss_mask", pa.list_(pa.int8())),
            ("n_tokens", pa.int64()),
            ("n_trainable", pa.int64()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), build_dir / "rows-00000.parquet")
    # the draft vocabulary exactly as the build stage makes it
    from pipeline.build.vocab import draft_vocab, save_vocab, token_counts

    counts = token_counts([build_dir / "rows-00000.parquet"], vocab_size)
    d2t, t2d = draft_vocab(counts, draft_vocab_size)
    save_vocab(build_dir / "vocab.safetensors", d2t, t2d, counts)
    if bad_rows:  # a second shard of rows the build would never write: capture must quarantine them
        pq.write_table(pa.Table.from_pylist(bad_rows, schema=schema), build_dir / "rows-00001.parquet")
        rows += bad_rows
    (build_dir / "manifest.json").write_text(
        json.dumps(
            {
                "model_dir": "toy",
                "chat_template_sha256": hashlib.sha256(TEMPLATE.encode()).hexdigest(),
                "vocab_size": vocab_size,
                "draft_vocab_size": draft_vocab_size,
                "system_prompt": None,
                "thinking": True,
                "max_length": 64,
                "n_rows": len(rows),
                "n_tokens": sum(r["n_tokens"] or 0 for r in rows),
            }
        )
    )
    return build_dir


DSV3_VOCAB = 512


def make_dsv3(model_dir: Path, q_lora_rank: int | None = 48) -> Path:
    """A random DeepSeek-V3-shaped target (MLA attention, shared + routed experts, a dense first layer): the
    architecture of Kimi-K2.5, small enough for CPU; q_lora_rank None gives DeepSeek-V2-Lite's plain q_proj."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    cfg = DeepseekV3Config(
        vocab_size=DSV3_VOCAB,
        hidden_size=128,
        intermediate_size=256,
        moe_intermediate_size=64,
        num_hidden_layers=8,
        num_attention_heads=4,
        num_key_value_heads=4,
        n_shared_experts=1,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_group=2,
        topk_group=1,
        first_k_dense_replace=1,
        kv_lora_rank=32,
        q_lora_rank=q_lora_rank,
        qk_rope_head_dim=16,
        v_head_dim=32,
        qk_nope_head_dim=32,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    DeepseekV3ForCausalLM(cfg).save_pretrained(model_dir)
    return model_dir


def train_mla_toy(root: Path) -> tuple[Path, Path, Path, Path]:
    """(target, build, capture, draft): a tiny DeepSeek-V3 target, its capture, and the MLA draft its architecture
    gets, trained offline for a few epochs and exported (a few seconds on CPU)."""
    from pipeline.capture.run import CaptureConfig, run_capture
    from pipeline.train.loop import TrainConfig, run_train

    model, build = make_dsv3(root / "model"), make_build(root / "build", n_rows=12, vocab_size=DSV3_VOCAB)
    run_capture(CaptureConfig(build_dir=build, model_dir=model, out_dir=root / "capture", device="cpu"))
    common = {**PLAIN, "epochs": 3, "lr": 3e-3, "batch_tokens": 128, "ttt_steps": 2, "log_every": 1, "device": "cpu"}
    run_train(TrainConfig(capture_dir=root / "capture", out_dir=root / "draft", **common))
    return model, build, root / "capture", root / "draft"


@dataclass
class Toy:
    root: Path
    model: Path
    build: Path
    capture: Path
    draft: Path


def train_toy(root: Path) -> Iterator[Toy]:
    """The toy pipeline in `root` (a generator: the session fixture restores torch's threads after it)."""
    from pipeline.capture.run import CaptureConfig, run_capture
    from pipeline.train.loop import TrainConfig, run_train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CI has 2 shared cores: one thread avoids spin-wait contention (restored after)
    model, build = make_target(root / "model"), make_build(root / "build")
    run_capture(CaptureConfig(build_dir=build, model_dir=model, out_dir=root / "capture", device=DEVICE))
    run_train(
        TrainConfig(
            capture_dir=root / "capture",
            out_dir=root / "draft",
            **{**PLAIN, "epochs": 25, "lr": 5e-3, "batch_tokens": 512, "ttt_steps": 3},
            log_every=1000,
            device=DEVICE,
        )
    )
    yield Toy(root, model, build, root / "capture", root / "draft")
    torch.set_num_threads(threads)
