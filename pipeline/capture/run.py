"""The capture stage: run the target over built rows and store aux taps + verifier state (bf16).

Runs without the catalog (GPU hosts): pass catalog=None. Under torchrun each rank takes every
world_size-th pending row and writes its own shards; rank 0 writes the manifest at the end.
With `tp=True` (a target larger than one GPU) the ranks instead load ONE copy of the target with
transformers' tensor parallelism (`tp_plan="auto"`), all run every batch together, and rank 0 writes.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from catalog.errors import DraftsetError
from pipeline.capture.config import CaptureConfig
from pipeline.capture.forward import capture_batch
from pipeline.capture.layers import LayerPlan
from pipeline.capture.manifest import (
    CaptureCounts,
    CaptureManifest,
    chat_template_sha256,
    hidden_bytes_per_token,
    model_config,
    model_revision,
    taps_for,
)
from pipeline.capture.rows import BuiltRow, read_build_rows
from pipeline.capture.runtime import dist_info, length_batches, pick_device, progress, rank_dir
from pipeline.capture.store import CaptureReader, ShardWriter
from pipeline.model.tiktoken_convert import tokenizer_sha256
from pipeline.stage import StageRun

if TYPE_CHECKING:
    import torch  # imported where it runs: the module stays importable without loading torch

ID_BYTES_PER_TOKEN = 5  # input_ids int32 + loss_mask int8 stored beside the hidden states
DISK_MARGIN = 1.05  # safetensors headers and the temp file of the shard being written


def preflight_disk(out_dir: Path, n_tokens: int, per_token: int) -> int:
    """Refuse to start when the disk cannot hold the capture; returns the estimated bytes."""
    need = math.ceil(n_tokens * (per_token + ID_BYTES_PER_TOKEN) * DISK_MARGIN)
    free = shutil.disk_usage(out_dir).free
    if need > free:
        raise DraftsetError(
            f"capture needs ~{need / 1e9:.2f} GB for {n_tokens:,} tokens × {per_token + ID_BYTES_PER_TOKEN} B "
            f"but {out_dir} has {free / 1e9:.2f} GB free",
            hint="free disk space, point --out at a larger disk, or capture fewer rows (--max-rows)",
        )
    return need


def capture_rows(
    model: Any,
    rows: list[BuiltRow],
    plan: LayerPlan,
    device: torch.device,
    batch_tokens: int,
    writer: ShardWriter | None,
    run: StageRun,
    label: str = "capture",
) -> None:
    """The capture loop proper (also what the benchmark times): batches → forward → shards.

    The loop never waits for the GPU: each batch's device→host copy and its write run behind the next
    forwards (forward.capture_batch, store.ShardWriter). `writer=None`: a tensor-parallel peer rank that
    only takes part in the forwards."""
    with progress() as bar:
        task = bar.add_task(label, total=sum(len(r.input_ids) for r in rows))
        for batch in length_batches(rows, lambda r: len(r.input_ids), batch_tokens):
            host = capture_batch(model, batch, plan, device)
            if writer is not None:
                writer.add_batch(host)
            bar.advance(task, sum(len(r.input_ids) for r in batch))
    if writer is None:
        return
    writer.close()
    for row in writer.non_finite:
        run.drop("non_finite", where={"id": row.id, "row_index": row.row_index, "field": "hidden_states"})
    run.emitted(writer.kept)


def run_capture(config: CaptureConfig, catalog: Any | None = None) -> CaptureManifest:
    import torch

    from pipeline.model.load import load_target

    rank, world = dist_info()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    mcfg = model_config(config.model_dir)
    plan = LayerPlan.resolve(mcfg["num_hidden_layers"], config.layers)
    build_manifest, rows = read_build_rows(config.build_dir, vocab_size=mcfg["vocab_size"])
    if config.max_rows is not None:
        rows = rows[: config.max_rows]
    done = set(CaptureReader(config.out_dir).ids())
    shard = not config.tp  # tensor parallel: every rank runs every row (one model across the GPUs)
    mine = [r for i, r in enumerate(rows) if not shard or i % world == rank]
    writes = shard or rank == 0
    pending = [r for r in mine if r.id not in done]
    per_token = hidden_bytes_per_token(len(plan.aux), mcfg["hidden_size"])
    preflight_disk(config.out_dir, sum(len(r.input_ids) for r in pending), per_token)
    _copy_vocab(config.build_dir, config.out_dir)

    device = pick_device(config.device)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}.get(
        config.dtype, torch.bfloat16 if device.type == "cuda" else torch.float32
    )
    bookkeeping = rank_dir(config.out_dir, rank, world if shard else 1) if writes else config.out_dir / f"rank{rank}"
    with StageRun("capture", config, bookkeeping, catalog if writes else None) as run:
        run.seen(len(mine))
        run.skipped("already_captured", len(mine) - len(pending))
        for bad in pending:
            if bad.problem:
                run.drop(bad.problem, where={"id": bad.id, "row_index": bad.row_index, "field": bad.field})
        good = [r for r in pending if not r.problem]
        if good:
            model = load_target(config.model_dir, dtype, tp=config.tp and world > 1)
            if not (config.tp and world > 1):
                model = model.to(device)
            elif rank == 0:  # says that transformers did shard it (a silently replicated target would not)
                print(f"capture: target tensor-parallel over {getattr(model, 'tp_size', None)} ranks", flush=True)
            writer = ShardWriter(config.out_dir, rank, config.shard_bytes, config.writer_threads) if writes else None
            t0 = time.perf_counter()
            capture_rows(model, good, plan, device, config.batch_tokens, writer, run, f"capture r{rank}")
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
            tokens = sum(len(r.input_ids) for r in good)
            print(
                f"capture r{rank}: {tokens} tokens in {seconds:.2f} s = {tokens / seconds:,.0f} tok/s "
                f"(forward + copy + write, model load excluded)",
                flush=True,
            )
        if not writes:
            run.emitted(len(good))  # this rank computed them; rank 0 stored them
    if world > 1:
        torch.distributed.barrier()
    manifest = _manifest(config, mcfg, plan, build_manifest, per_token)
    if rank == 0:
        manifest.save(config.out_dir)
    return manifest


def _copy_vocab(build_dir: Path, out_dir: Path) -> None:
    """Training must run from the capture alone (GPU hosts), so the draft vocabulary travels with it."""
    src = Path(build_dir) / "vocab.safetensors"
    if src.exists() and not (out_dir / src.name).exists():
        shutil.copyfile(src, out_dir / src.name)


def _manifest(
    config: CaptureConfig, mcfg: dict[str, Any], plan: LayerPlan, build: dict[str, Any], per_token: int
) -> CaptureManifest:
    n_samples = n_tokens = n_loss = 0
    reader = CaptureReader(config.out_dir)
    for _, sample in reader.items(fields=("loss_mask",)):  # never the hidden states: a capture can be TBs
        n_samples += 1
        n_tokens += int(sample["loss_mask"].numel())
        n_loss += int(sample["loss_mask"].sum())
    file_bytes = sum(p.stat().st_size for p in set(reader.where.values()))
    return manifest_for(
        config.model_dir,
        config.build_dir,
        mcfg,
        plan,
        build,
        per_token,
        n_samples=n_samples,
        n_tokens=n_tokens,
        n_loss_tokens=n_loss,
        hidden_bytes=n_tokens * per_token,
        file_bytes=file_bytes,
    )


def manifest_for(
    model_dir: Path,
    build_dir: Path,
    mcfg: dict[str, Any],
    plan: LayerPlan,
    build: dict[str, Any],
    per_token: int,
    **counts: Unpack[CaptureCounts],
) -> CaptureManifest:
    """The manifest of taps taken from `model_dir` over `build_dir` (offline capture and online training)."""
    return CaptureManifest(
        model_dir=str(Path(model_dir).resolve()),
        model_id=str(mcfg.get("_name_or_path") or model_dir),
        model_revision=model_revision(model_dir),
        model_type=str(mcfg.get("model_type", "")),
        n_layers=plan.n_layers,
        hidden_size=mcfg["hidden_size"],
        vocab_size=mcfg["vocab_size"],
        rms_norm_eps=float(mcfg.get("rms_norm_eps", 1e-6)),
        taps=taps_for(plan),
        hidden_bytes_per_token=per_token,
        chat_template_sha256=build.get("chat_template_sha256") or chat_template_sha256(model_dir),
        tokenizer_sha256=tokenizer_sha256(model_dir),
        system_prompt=build.get("system_prompt"),
        thinking=build.get("thinking"),
        max_length=build.get("max_length"),
        draft_vocab_size=build.get("draft_vocab_size"),
        build_dir=str(Path(build_dir).resolve()),
        **counts,
    )
