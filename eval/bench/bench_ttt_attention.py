"""The training-time-test attention's kernels against the eager reference: forward + backward time and peak memory.

    python -m eval.bench.bench_ttt_attention --device cpu|cuda [--json PATH] [--repeats N] [--shape B,h,L,dqk,dv,steps]

One shape is one TTT unroll of the draft's attention (pipeline/train/ttt_attention.py): `steps` calls sharing one
cache, every step's q, k, v a leaf (keys already expanded to every head, as the draft's `project` gives them), then
the backward of a fixed random cotangent on every step's output. Each kernel (eager, the naive baseline, then sdpa
and flex) runs in the same process on the same tensors; reported per row: the median milliseconds over `--repeats`
after two warm-ups (flex compiles in them on CUDA), the speed-up over eager (eager ms / kernel ms), on CUDA the
peak memory above the inputs (torch.cuda.max_memory_allocated) and its ratio to eager's, and the largest absolute
difference from eager's outputs and gradients (bf16 on CUDA, fp32 on CPU). A kernel that fails records its error
and the command exits 1 after writing the JSON. On CPU flex is skipped: torch 2.13 has no flex_attention backward
there. Default shapes: CUDA a Llama-style draft (32 heads of 128) and Kimi-K2's MLA draft (64 heads, qk 192, v 128)
at 2,048 tokens and 7 steps, and 4,096 tokens; CPU small ones. Imports torch and this repo only (a bare GPU image).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from pipeline.train.ttt_attention import KERNELS, ttt_attention

if TYPE_CHECKING:  # the settings module imports the stage machinery (yaml, ...): not at run time on a bare image
    from pipeline.train.config import TTTAttention

Shape = tuple[int, int, int, int, int, int]  # B, heads, L, d_qk, d_v, steps
CUDA_SHAPES: list[Shape] = [(1, 32, 2048, 128, 128, 7), (1, 64, 2048, 192, 128, 7), (1, 32, 4096, 128, 128, 7)]
CPU_SHAPES: list[Shape] = [(1, 4, 512, 32, 32, 3), (1, 4, 1024, 64, 64, 7), (1, 4, 1024, 96, 64, 7)]
NO_FLEX_BACKWARD = "torch has no flex_attention backward on CPU"


def leaves(shape: Shape, device: torch.device, dtype: torch.dtype) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(every step's q, k, v as leaves, one cotangent per step's output), from one seed."""
    b, h, n, dqk, dv, steps = shape
    g = torch.Generator(device).manual_seed(0)
    tensors = [
        torch.randn(b, h, n, dim, generator=g, device=device, dtype=dtype).requires_grad_()
        for _ in range(steps)
        for dim in (dqk, dqk, dv)
    ]
    return tensors, [torch.randn(b, h, n, dv, generator=g, device=device, dtype=dtype) for _ in range(steps)]


def unroll(kernel: str, tensors: list[torch.Tensor], cotangents: list[torch.Tensor]) -> list[torch.Tensor]:
    """Forward over every step, then the gradients of every leaf: [outputs..., grads...]."""
    cache: list = []
    scale = tensors[0].shape[-1] ** -0.5
    name = cast("TTTAttention", kernel)
    outs = []
    for i in range(0, len(tensors), 3):
        q, k, v = tensors[i : i + 3]
        outs.append(ttt_attention(q, k, v, cache, scale, name))
    loss = torch.stack([(o.float() * g.float()).sum() for o, g in zip(outs, cotangents, strict=True)]).sum()
    return [o.detach() for o in outs] + list(torch.autograd.grad(loss, tensors))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(kernel: str, shape: Shape, device: torch.device, dtype: torch.dtype, repeats: int) -> dict[str, Any]:
    """One kernel on one shape: median ms, peak MiB above the inputs (CUDA), and its outputs and gradients."""
    tensors, cotangents = leaves(shape, device, dtype)
    for _ in range(2):  # warm-ups: flex's compile, the allocator, sdpa's backend choice
        unroll(kernel, tensors, cotangents)
    times = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        unroll(kernel, tensors, cotangents)
        sync(device)
        times.append(time.perf_counter() - t0)
    peak = None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        result = unroll(kernel, tensors, cotangents)
        sync(device)
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    else:
        result = unroll(kernel, tensors, cotangents)
    return {"median_ms": statistics.median(times) * 1e3, "peak_MiB": peak, "result": result}


def shape_rows(shape: Shape, device: torch.device, dtype: torch.dtype, repeats: int) -> list[dict[str, Any]]:
    """Eager first (the baseline of the same run), then each fused kernel against it."""
    b, h, n, dqk, dv, steps = shape
    head = {"B": b, "heads": h, "L": n, "d_qk": dqk, "d_v": dv, "steps": steps}
    rows, eager = [], None
    for kernel in KERNELS:
        row: dict[str, Any] = {**head, "kernel": kernel}
        if kernel == "flex" and device.type != "cuda":
            rows.append({**row, "skipped": NO_FLEX_BACKWARD})
            continue
        try:
            got = measure(kernel, shape, device, dtype, repeats)
        except Exception as exc:  # one kernel's failure (out of memory, a compile error) is a row, not the end
            rows.append({**row, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"})
            if device.type == "cuda":
                torch.cuda.empty_cache()
            continue
        if kernel == "eager":
            eager = got
        row["median_ms"] = round(got["median_ms"], 3)
        row["peak_MiB"] = None if got["peak_MiB"] is None else round(got["peak_MiB"], 1)
        if eager is not None:
            row["speedup_vs_eager"] = round(eager["median_ms"] / got["median_ms"], 3)
            if got["peak_MiB"] is not None and eager["peak_MiB"]:
                row["peak_vs_eager"] = round(got["peak_MiB"] / eager["peak_MiB"], 3)
            diffs = (float((a.float() - e.float()).abs().max()) for a, e in zip(got["result"], eager["result"]))
            row["max_abs_diff_vs_eager"] = max(diffs)
        rows.append(row)
    return rows


def parse_shape(text: str) -> Shape:
    values = tuple(int(x) for x in text.split(","))
    if len(values) != 6 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--shape wants six positive integers B,h,L,dqk,dv,steps, got {text!r}")
    if values[5] < 2:
        raise argparse.ArgumentTypeError("--shape needs steps >= 2: step 0 is the same plain sdpa for every kernel")
    b, h, n, dqk, dv, steps = values
    return b, h, n, dqk, dv, steps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench.bench_ttt_attention", description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--json", type=Path, default=None, help="write the rows here")
    p.add_argument("--repeats", type=int, default=None, help="timed runs a kernel (default: 10 on CUDA, 3 on CPU)")
    p.add_argument("--shape", type=parse_shape, action="append", help="B,h,L,dqk,dv,steps (repeatable)")
    a = p.parse_args(argv)
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device")
    device = torch.device(a.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    repeats = a.repeats or (10 if device.type == "cuda" else 3)
    shapes = a.shape or (CUDA_SHAPES if device.type == "cuda" else CPU_SHAPES)
    where = torch.cuda.get_device_name() if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    title = f"TTT attention forward+backward on {where}, {str(dtype).removeprefix('torch.')}, torch {torch.__version__}"
    print(title, flush=True)
    rows = []
    for shape in shapes:
        for row in shape_rows(shape, device, dtype, repeats):
            rows.append(row)
            print("  " + ", ".join(f"{key} {value}" for key, value in row.items()), flush=True)
    if a.json:
        record = {"title": title, "device": a.device, "dtype": str(dtype), "torch": torch.__version__}
        a.json.write_text(json.dumps({**record, "repeats": repeats, "rows": rows}, indent=1))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
