"""Capture and draft-training throughput: `python -m eval.bench.bench_capture_train [--quick]`.

Capture: a randomly initialised Llama of realistic shape (hidden 4096, 32 layers) in bf16 over
synthetic rows; draftset's batched base-model pass (no logits) storing exactly the bf16 taps vs a
naive loop (one row per forward, full CausalLM with logits, taps saved in fp32 with torch.save).
Training: a Kimi-K2.5-shaped EAGLE-3 draft (hidden 7168, draft vocab 32,000, target vocab 163,840) on
synthetic hidden states, bf16 autocast vs naive fp32; FLOPs are counted explicitly (below) and
reported against the H200's ~790 dense bf16 TFLOP/s. Medians of several runs; `--quick` shrinks
every shape so the script runs on a CPU.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import torch

from catalog.io import write_json_atomic
from pipeline.capture.forward import HostBatch
from pipeline.capture.layers import LayerPlan
from pipeline.capture.rows import BuiltRow
from pipeline.capture.run import CaptureConfig, capture_rows
from pipeline.capture.store import ShardWriter
from pipeline.cli.common import print_table
from pipeline.stage import StageRun
from pipeline.train.draft_model import DraftConfig, Eagle3Draft
from pipeline.train.loop import train_step
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, TTTObjective

PEAK_BF16 = 790e12

# The draft layer for Kimi-K2.5 as SGLang's llama_eagle3 serves it: the target's width (7168) and vocabulary,
# 64 heads x 128 with GQA 8, DeepSeek-V3's dense MLP width (18432).
KIMI_K25_DRAFT = {
    "hidden_size": 7168,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 18432,
    "rope_theta": 50000.0,
    "vocab_size": 163840,
}


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _llama(shape: dict, device: torch.device) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.set_default_dtype(torch.bfloat16)  # initialise directly in bf16 on the device: no 32 GB fp32 copy
    try:
        with torch.device(device):
            model = LlamaForCausalLM(LlamaConfig(**shape))
    finally:
        torch.set_default_dtype(torch.float32)
    return model.eval()


class _Discard:
    """A writer that keeps nothing: times capture (forward + device→host copy) without serialisation and disk."""

    def __init__(self) -> None:
        self.kept = 0
        self.non_finite: list[str] = []
        self._last: HostBatch | None = None

    def add_batch(self, batch: HostBatch) -> None:
        if self._last is not None:
            self._last.wait()
        self._last = batch
        self.kept += len(batch.rows)

    def close(self) -> None:
        if self._last is not None:
            self._last.wait()


def bench_capture(
    shape: dict, n_rows: int, row_len: int, naive_rows: int, runs: int, device: torch.device
) -> list[list]:
    model = _llama(shape, device)
    n = shape["num_hidden_layers"]
    plan = LayerPlan.resolve(n, None)
    g = torch.Generator().manual_seed(0)
    rows = [
        BuiltRow(
            f"r{i}",
            i,
            torch.randint(0, shape["vocab_size"], (row_len,), generator=g).tolist(),
            [0] * 16 + [1] * (row_len - 16),
        )
        for i in range(n_rows)
    ]
    root = Path(tempfile.mkdtemp(prefix="bench-capture-", dir=os.environ.get("BENCH_DIR")))
    cfg = CaptureConfig(build_dir=root, model_dir=root, out_dir=root)
    ours, naive, compute = [], [], []
    for r in range(runs + 1):  # run 0 warms up kernels and the allocator
        _sync()
        t0 = time.perf_counter()
        with StageRun("capture-bench", cfg, root / "discard") as run:
            run.seen(len(rows))
            capture_rows(model, rows, plan, device, 16384, cast(ShardWriter, _Discard()), run)  # duck-typed writer
        _sync()
        if r:
            compute.append((time.perf_counter() - t0, 0))
        out = root / f"ours{r}"
        _sync()
        t0 = time.perf_counter()
        with StageRun("capture-bench", cfg, out) as run:
            run.seen(len(rows))
            capture_rows(model, rows, plan, device, 16384, ShardWriter(out, 0, 1 << 28), run)
        _sync()
        dt = time.perf_counter() - t0
        written: float = sum(p.stat().st_size for p in out.glob("shard-*"))
        if r:
            ours.append((dt, written))
        shutil.rmtree(out)
        out.mkdir()
        _sync()
        t0 = time.perf_counter()
        with torch.inference_mode():
            for row in rows[:naive_rows]:
                o = model(input_ids=torch.tensor([row.input_ids], device=device), output_hidden_states=True)
                taps = [o.hidden_states[j][0].float().cpu() for j in plan.aux + [n]]
                torch.save({"hidden_states": taps, "input_ids": row.input_ids}, out / f"{row.id}.pt")
        _sync()
        dt = time.perf_counter() - t0
        if r:
            naive.append((dt, sum(p.stat().st_size for p in out.glob("*.pt"))))
        shutil.rmtree(out)
    shutil.rmtree(root, ignore_errors=True)
    table = []
    for name, results, count in (
        ("capture: draftset (batched, bf16 taps)", ours, n_rows),
        ("capture: same, no disk (compute + host copy)", compute, n_rows),
        ("capture: naive (1 row/forward, logits, fp32)", naive, naive_rows),
    ):
        dt = statistics.median(t for t, _ in results)
        written = statistics.median(b for _, b in results)
        tokens = count * row_len
        table.append(
            [
                name,
                f"{tokens / dt:,.0f} tok/s",
                f"{written / dt / 1e9:.2f} GB/s",
                f"{written / tokens:,.0f} B/tok",
                "",
                f"{dt:.2f} s",
            ]
        )
    return table


def train_flops_per_token(c: DraftConfig, steps: int, seq: int) -> float:
    """Matmul FLOPs per token of one optimiser step: 3x (forward + backward) for the trainable draft,
    1x for the frozen target head (no gradient). Attention counts the causal half of QK^T and PV."""
    h, q, kv = c.hidden_size, c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    per_step = 2 * (2 * h * q + 2 * 2 * h * kv + q * h + 3 * h * c.intermediate_size + h * c.draft_vocab_size)
    attention = 2 * 2 * q * seq / 2
    trainable = 2 * c.n_aux * c.target_hidden_size * h + steps * (per_step + attention)
    return 3 * trainable + 2 * c.target_hidden_size * c.vocab_size


def bench_train(
    c: DraftConfig, batch: int, seq: int, steps: int, runs: int, iters: int, device: torch.device
) -> list[list]:
    torch.manual_seed(0)
    target = FrozenTarget.random(c.vocab_size, c.target_hidden_size, device=device)
    flops = train_flops_per_token(c, steps, seq) * batch * seq
    table = []
    for name, bf16, n_runs in (
        ("train: draftset (bf16 autocast)", True, runs),
        ("train: naive (fp32)", False, max(2, runs // 2)),
    ):
        draft = Eagle3Draft(c).to(device)
        hot = torch.randperm(c.vocab_size, device=device)[: c.draft_vocab_size].sort().values
        draft.d2t.copy_(hot - torch.arange(c.draft_vocab_size, device=device))
        draft.t2d[hot] = True
        model = TTTObjective(draft)
        opt = torch.optim.AdamW(draft.parameters(), lr=1e-4)
        dtype = torch.bfloat16 if bf16 else torch.float32
        data = Batch(
            torch.randint(0, c.vocab_size, (batch, seq), device=device),
            torch.rand(batch, seq, device=device) < 0.7,
            torch.randn(batch, seq, c.n_aux * c.target_hidden_size, device=device, dtype=dtype),
            torch.randn(batch, seq, c.target_hidden_size, device=device, dtype=dtype),
        )
        tgt = target if bf16 else target.to(device, torch.float32)
        try:
            train_step(model, draft, tgt, data, opt, steps, 0.5, bf16=bf16)  # warm-up
            times = []
            for _ in range(n_runs):
                _sync()
                t0 = time.perf_counter()
                for _ in range(iters):
                    loss, _ = train_step(model, draft, tgt, data, opt, steps, 0.5, bf16=bf16)
                _sync()
                times.append((time.perf_counter() - t0) / iters)
        except torch.OutOfMemoryError:
            table.append([name, "out of memory", "", "", "", ""])
            continue
        assert torch.isfinite(loss), f"{name}: loss is {loss}"
        dt = statistics.median(times)
        table.append(
            [
                name,
                f"{batch * seq / dt:,.0f} tok/s",
                "",
                "",
                f"{flops / dt / 1e12:,.1f} TFLOP/s ({100 * flops / dt / PEAK_BF16:.0f}% of 790)",
                f"{dt:.3f} s/step",
            ]
        )
        del draft, model, opt, data
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return table


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m eval.bench.bench_capture_train", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny shapes (CPU smoke run)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", type=Path, default=None, help="also write the table here")
    a = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if a.quick:
        llama = dict(
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=8,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
        )
        cap = dict(n_rows=16, row_len=128, naive_rows=8)
        draft = DraftConfig.tiny(hidden_size=128, vocab_size=2000, draft_vocab_size=500, max_length=512, head_dim=32)
        tr = dict(batch=2, seq=128, steps=7, iters=2)
    else:
        llama = dict(
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            vocab_size=128256,
            max_position_embeddings=8192,
        )
        cap = dict(n_rows=64, row_len=2048, naive_rows=8)
        draft = DraftConfig.from_target(KIMI_K25_DRAFT, n_aux=3, draft_vocab_size=32000, max_length=4096)
        tr = dict(batch=2, seq=2048, steps=7, iters=3)
    rows = bench_capture(llama, runs=a.runs, device=device, **cap)
    rows += bench_train(draft, runs=a.runs, device=device, **tr)
    title = f"capture + train throughput on {torch.cuda.get_device_name() if device.type == 'cuda' else 'CPU'}"
    print_table(["what", "tokens/s", "GB/s written", "bytes/token", "achieved", "median time"], rows, title=title)
    if a.json:
        write_json_atomic(a.json, {"title": title, "rows": rows})


if __name__ == "__main__":
    main()
