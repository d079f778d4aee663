"""The MLA draft against the Llama-style draft at Kimi-K2's shape: parameters, the draft's KV cache a token, and
training throughput of the TTT objective.

`python -m eval.bench.bench_mla_draft [--quick] [--json OUT]`. Rows, all built from one Kimi-K2 text config:
  mla:              what `draftset train` now gives a DeepSeek-V3/Kimi target (pipeline/train/draft_mla.py)
  llama (naive):    the Llama-style draft the same target got before (DraftConfig.from_target on Kimi's config:
                    64 KV heads of hidden/heads = 112, the baseline)
  llama 8x128 GQA:  a hand-tuned GQA draft (8 KV heads of 128, the shape bench_capture_train measures)
Synthetic taps (FrozenTarget.random): throughput only, not accuracy. --quick: a tiny DeepSeek-V3 shape on CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from pipeline.train.draft_mla import DraftMLAConfig
from pipeline.train.draft_model import DraftConfig, Eagle3Draft
from pipeline.train.loop import train_step
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, TTTObjective

# Kimi-K2's text model (config.json of moonshotai/Kimi-K2-Instruct; Kimi-K2.5's text_config has the same shape)
KIMI_K2 = {
    "hidden_size": 7168,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "intermediate_size": 18432,
    "rms_norm_eps": 1e-6,
    "rope_theta": 50000.0,
    "vocab_size": 163840,
}
TINY_DSV3 = {**KIMI_K2, "hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 48}
TINY_DSV3 |= {"kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32}
TINY_DSV3 |= {"intermediate_size": 256, "vocab_size": 2000}


def drafts(target: dict, k: int, max_length: int) -> dict[str, DraftConfig | DraftMLAConfig]:
    big = target["hidden_size"] > 1024
    gqa = {**target, "num_key_value_heads": 8 if big else 2, "head_dim": 128 if big else 32}
    return {
        "mla": DraftMLAConfig.from_target(target, 3, k, max_length),
        "llama (naive)": DraftConfig.from_target(target, 3, k, max_length),
        "llama 8x128 GQA": DraftConfig.from_target(gqa, 3, k, max_length),
    }


def cache_per_token(c: DraftConfig | DraftMLAConfig) -> int:
    """Values the served draft keeps a token: MLA caches the latent and the one rope key; GQA keys and values."""
    if isinstance(c, DraftMLAConfig):
        return c.kv_lora_rank + c.qk_rope_head_dim
    return 2 * c.num_key_value_heads * c.head_dim


def n_params(c: DraftConfig | DraftMLAConfig) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in Eagle3Draft(c).parameters())


def throughput(
    c: DraftConfig | DraftMLAConfig, batch: int, seq: int, steps: int, runs: int, device: torch.device
) -> tuple[float, float, float | None]:
    torch.manual_seed(0)
    bf16 = device.type == "cuda"
    dtype = torch.bfloat16 if bf16 else torch.float32
    target = FrozenTarget.random(c.vocab_size, c.target_hidden_size, device=device, dtype=dtype)
    draft = Eagle3Draft(c).to(device)
    hot = torch.randperm(c.vocab_size, device=device)[: c.draft_vocab_size].sort().values
    draft.d2t.copy_(hot - torch.arange(c.draft_vocab_size, device=device))
    draft.t2d[hot] = True
    model, opt = TTTObjective(draft), torch.optim.AdamW(draft.parameters(), lr=1e-4)
    data = Batch(
        torch.randint(0, c.vocab_size, (batch, seq), device=device),
        torch.rand(batch, seq, device=device) < 0.7,
        torch.randn(batch, seq, c.n_aux * c.target_hidden_size, device=device, dtype=dtype),
        torch.randn(batch, seq, c.target_hidden_size, device=device, dtype=dtype),
    )
    train_step(model, draft, target, data, opt, steps, 0.5, bf16=bf16)  # warm-up
    times = []
    for _ in range(runs):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss, _ = train_step(model, draft, target, data, opt, steps, 0.5, bf16=bf16)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    assert torch.isfinite(loss), f"loss is {loss}"
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    del draft, model, opt, data
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    dt = statistics.median(times)
    return batch * seq / dt, dt, peak


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m eval.bench.bench_mla_draft", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a tiny DeepSeek-V3 shape on CPU")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() and not a.quick else "cpu")
    target, k, (batch, seq, steps) = (TINY_DSV3, 500, (2, 128, 3)) if a.quick else (KIMI_K2, 32000, (1, 2048, 7))
    rows = []
    for name, c in drafts(target, k, seq).items():
        tok_s, dt, peak = throughput(c, batch, seq, steps, a.runs, device)
        rows.append(
            {
                "draft": name,
                "params_M": round(n_params(c) / 1e6, 1),
                "kv_cache_values_per_token": cache_per_token(c),
                "kv_cache_bytes_per_token_bf16": 2 * cache_per_token(c),
                "train_tok_per_s": round(tok_s),
                "s_per_step": round(dt, 4),
                "peak_GiB": None if peak is None else round(peak, 1),
            }
        )
    where = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    title = f"MLA vs Llama-style draft at {'a tiny DeepSeek-V3' if a.quick else 'Kimi-K2'} shape on {where}"
    title += f" (batch {batch} x {seq} tokens, {steps} TTT steps)"
    print(title)
    for r in rows:
        print("  " + ", ".join(f"{key} {value}" for key, value in r.items()))
    if a.json:
        a.json.write_text(json.dumps({"title": title, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
