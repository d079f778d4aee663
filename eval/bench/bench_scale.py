"""Kimi-scale figures on a 2-GPU host; eval/bench/run_scale.sh drives it (see the notes file beside it).

prepare DIR [--only llama]  random targets built locally (a DeepSeek-V3-shaped MoE with MLA, and a Llama) + rows
compare A B                 per-tap relative difference between two captures of the same rows (TP vs one GPU)
summary DIR LOGS            tokens/s, MFU and bytes written: offline (capture, then train) vs online training
mfu DIR DRAFT...            online training's tokens/s and MFU of each draft trained on DIR's Llama rows
                            (eval/bench/run_mfu.sh: one GPU, one row per TTT attention kernel and round)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path

import torch

PEAK_BF16 = 790e12
DSV3 = dict(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=5632,
    moe_intermediate_size=1024,
    num_hidden_layers=8,
    num_attention_heads=16,
    num_key_value_heads=16,
    n_shared_experts=1,
    n_routed_experts=16,
    num_experts_per_tok=4,
    n_group=4,
    topk_group=2,
    first_k_dense_replace=1,
    kv_lora_rank=256,
    q_lora_rank=768,
    qk_rope_head_dim=32,
    v_head_dim=64,
    qk_nope_head_dim=64,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)
LLAMA = dict(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=8,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=8192,
    tie_word_embeddings=False,
)
ROWS = {"dsv3": (128, 1024), "llama": (128, 2048)}
if os.environ.get("SCALE_TINY"):  # a CPU smoke run of the whole script
    DSV3.update(
        vocab_size=33000,
        hidden_size=64,
        intermediate_size=128,
        moe_intermediate_size=32,
        kv_lora_rank=16,
        q_lora_rank=24,
        qk_rope_head_dim=8,
        v_head_dim=16,
        qk_nope_head_dim=16,
        num_attention_heads=4,
        num_key_value_heads=4,
    )
    LLAMA.update(vocab_size=33000, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
    ROWS = {"dsv3": (8, 128), "llama": (8, 256)}


def _save_random(cls_name: str, shape: dict, out: Path) -> None:
    import transformers

    cfg = getattr(transformers, cls_name.replace("ForCausalLM", "Config"))(**shape)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = getattr(transformers, cls_name)(cfg)
    finally:
        torch.set_default_dtype(torch.float32)
    model.save_pretrained(out)
    (out / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))


def _build(out: Path, vocab: int, n_rows: int, length: int) -> None:
    """Build rows in the build stage's format (rows parquet, manifest, draft vocabulary)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.build.vocab import draft_vocab, save_vocab, token_counts

    g = torch.Generator().manual_seed(1)
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float) ** 0.8  # Zipf-like, as text is
    rows = []
    for i in range(n_rows):
        ids = torch.multinomial(weights, length, replacement=True, generator=g).tolist()
        rows.append({"id": f"r{i:05d}", "input_ids": ids, "loss_mask": [0] * 64 + [1] * (length - 64)})
    out.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("id", pa.string()), ("input_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.int8()))])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / "rows-00000.parquet")
    counts = token_counts([out / "rows-00000.parquet"], vocab)
    save_vocab(out / "vocab.safetensors", *draft_vocab(counts, 32000), counts)
    (out / "manifest.json").write_text(
        json.dumps(
            {
                "chat_template_sha256": None,
                "system_prompt": None,
                "thinking": None,
                "max_length": length,
                "draft_vocab_size": 32000,
            }
        )
    )


TARGETS = {"dsv3": ("DeepseekV3ForCausalLM", DSV3), "llama": ("LlamaForCausalLM", LLAMA)}


def prepare(root: Path, only: list[str] | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in only or list(TARGETS):
        cls_name, shape = TARGETS[name]
        _save_random(cls_name, shape, root / name)
        _build(root / f"build-{name}", shape["vocab_size"], *ROWS[name])


def compare(a: Path, b: Path) -> dict:
    from pipeline.capture.manifest import CaptureManifest
    from pipeline.capture.store import CaptureReader

    m = CaptureManifest.load(a)
    ra, rb = CaptureReader(a), CaptureReader(b)
    assert ra.ids() == rb.ids(), "the captures hold different samples"
    names = [f"aux j={j}" for j in m.taps.aux] + ["verifier (pre-norm last)"]
    worst, H = [0.0] * len(names), m.hidden_size
    for sample_id in ra.ids():
        x, y = ra.load(sample_id), rb.load(sample_id)
        for k in range(len(names)):
            p, q = (
                (x["last"], y["last"])
                if k == len(names) - 1
                else (x["aux"][:, k * H : (k + 1) * H], y["aux"][:, k * H : (k + 1) * H])
            )
            worst[k] = max(worst[k], float((p.float() - q.float()).norm() / p.float().norm()))
    return {"samples": len(ra.ids()), "worst_relative_difference": dict(zip(names, worst))}


def _non_embedding_params(model_dir: Path) -> int:
    from safetensors import safe_open

    n = 0
    for f in model_dir.glob("*.safetensors"):
        with safe_open(str(f), framework="pt") as h:
            for k in h.keys():
                if "embed_tokens" not in k and "lm_head" not in k:
                    n += math.prod(h.get_slice(k).get_shape())
    return n


def _capture_rate(log: str, label: str) -> tuple[int, float]:
    hit = re.search(rf"\[{label}\].*?capture r0: (\d+) tokens in ([\d.]+) s", log, re.S)
    return (int(hit.group(1)), float(hit.group(2))) if hit else (0, float("nan"))


def _flops_per_token(root: Path, draft_dir: Path, n_aux: int) -> tuple[float, float]:
    """(draft training, target forward) matmul FLOPs per token of the Llama rows, as `summary` counts them."""
    from eval.bench.bench_capture_train import train_flops_per_token
    from pipeline.train.draft_model import DraftConfig

    dc = DraftConfig.from_exported(json.loads((draft_dir / "config.json").read_text()), n_aux)
    seq = ROWS["llama"][1]
    n_layers, hidden = LLAMA["num_hidden_layers"], LLAMA["hidden_size"]
    return train_flops_per_token(dc, 7, seq), 2 * _non_embedding_params(
        root / "llama"
    ) + 2 * 2 * n_layers * hidden * seq / 2


def mfu(root: Path, drafts: list[Path]) -> dict:
    """Online training's tokens/s and MFU per draft directory (its `draftset_metrics.json`, `config.json` and the
    kernel its checkpoint's resolved.json trained with), loop time only, as `summary` reports the online path."""
    out: dict = {}
    for d in drafts:
        metrics = json.loads((d / "draftset_metrics.json").read_text())
        resolved = json.loads((d / "train" / "checkpoint" / "resolved.json").read_text())
        draft_f, target_f = _flops_per_token(root, d, len(resolved["capture_manifest"]["taps"]["aux"]))
        tokens, seconds = metrics["rank0_tokens"], metrics["rank0_loop_seconds"]
        out[d.name] = {
            "ttt_attention": resolved["train"].get("ttt_attention", "eager"),
            "tokens": tokens,
            "loop_s": seconds,
            "tok_per_s": round(tokens / seconds),
            "mfu_percent": round(100 * (draft_f + target_f) * tokens / seconds / PEAK_BF16, 1),
            "train_step_accuracy": metrics.get("train_step_accuracy"),
        }
    return out


def summary(root: Path, log_path: Path) -> dict:
    from pipeline.capture.manifest import CaptureManifest

    log = log_path.read_text()
    out: dict = {}
    for label in ("dsv3-1gpu-bf16", "dsv3-tp2-bf16", "dsv3-1gpu-fp32", "dsv3-tp2-fp32", "llama-capture"):
        tokens, seconds = _capture_rate(log, label)
        out[f"capture {label}"] = {"tokens": tokens, "seconds": seconds, "tok_per_s": round(tokens / seconds)}
    cap = CaptureManifest.load(root / "cap-llama")
    off = json.loads((root / "draft-off" / "draftset_metrics.json").read_text())
    on = json.loads((root / "draft-on" / "draftset_metrics.json").read_text())
    draft_f, target_f = _flops_per_token(root, root / "draft-off", len(cap.taps.aux))
    tokens = off["rank0_tokens"]
    t_cap = out["capture llama-capture"]["seconds"]
    t_off, t_on = off["rank0_loop_seconds"], on["rank0_loop_seconds"]
    useful = (draft_f + target_f) * tokens
    out["offline"] = {
        "tokens": tokens,
        "capture_s": t_cap,
        "train_s": t_off,
        "tok_per_s": round(tokens / (t_cap + t_off)),
        "train_only_tok_per_s": round(tokens / t_off),
        "mfu_percent": round(100 * useful / (t_cap + t_off) / PEAK_BF16, 1),
        "hidden_state_bytes_written": cap.file_bytes,
    }
    out["online"] = {
        "tokens": on["rank0_tokens"],
        "train_s": t_on,
        "tok_per_s": round(on["rank0_tokens"] / t_on),
        "mfu_percent": round(100 * (draft_f + target_f) * on["rank0_tokens"] / t_on / PEAK_BF16, 1),
        "hidden_state_bytes_written": sum(p.stat().st_size for p in (root / "draft-on").rglob("shard-*")),
        "all_bytes_written": sum(p.stat().st_size for p in (root / "draft-on").rglob("*") if p.is_file()),
    }
    out["flops_per_token"] = {"draft_train": draft_f, "target_forward": target_f}
    out["accuracy"] = {"offline": off["train_step_accuracy"], "online": on["train_step_accuracy"]}
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m eval.bench.bench_scale", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("prepare")
    pr.add_argument("root", type=Path)
    pr.add_argument("--only", action="append", choices=sorted(TARGETS), help="build only this target (repeatable)")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    s = sub.add_parser("summary")
    s.add_argument("root", type=Path)
    s.add_argument("log", type=Path)
    m = sub.add_parser("mfu")
    m.add_argument("root", type=Path)
    m.add_argument("drafts", type=Path, nargs="+")
    a = p.parse_args()
    if a.cmd == "prepare":
        prepare(a.root, a.only)
    elif a.cmd == "mfu":
        print(json.dumps(mfu(a.root, a.drafts), indent=1))
    else:
        print(json.dumps(compare(a.a, a.b) if a.cmd == "compare" else summary(a.root, a.log), indent=1))


if __name__ == "__main__":
    main()
