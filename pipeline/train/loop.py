"""The train stage: fit an EAGLE-3 draft on a capture (or online, on the target's forward), checkpoint
it with its resolved config, export.

Layer ids, hidden size and vocabulary all come from the capture manifest (online: the same manifest,
computed from the build and the target); the only knobs here are optimisation ones. bf16 autocast on
GPU, fp32 on CPU; DDP under torchrun; resumable mid-epoch (train/resume.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from catalog.errors import DraftsetError
from catalog.io import atomic_path, write_json_atomic
from pipeline.capture.manifest import CaptureManifest, model_config
from pipeline.capture.runtime import dist_info, pick_device, progress, rank_dir
from pipeline.stage import StageRun
from pipeline.train.config import TrainConfig
from pipeline.train.data import split_ids, token_batches
from pipeline.train.draft_model import DraftConfig, Eagle3Draft
from pipeline.train.resume import STATE, Position, cut_log, load_state, save_state
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, StepStats, TTTObjective, step_accuracy, total_loss

if TYPE_CHECKING:
    from catalog import Catalog
    from pipeline.train.source import OfflineSource, OnlineSource

CHECKPOINT = "checkpoint"


def build_draft(target_dir: Path, manifest: CaptureManifest, vocab: dict, max_length: int) -> Eagle3Draft:
    """A draft shaped after the target's config.json, with the build's draft vocabulary."""
    mcfg = model_config(target_dir)
    draft = Eagle3Draft(DraftConfig.from_target(mcfg, len(manifest.taps.aux), int(vocab["d2t"].numel()), max_length))
    if int(vocab["t2d"].numel()) != manifest.vocab_size:
        raise DraftsetError(
            f"vocab.safetensors t2d has {vocab['t2d'].numel()} entries, target vocab is {manifest.vocab_size}",
            hint="rebuild with the same tokenizer as the capture's target",
        )
    draft.d2t.copy_(vocab["d2t"].long())
    draft.t2d.copy_(vocab["t2d"].bool())
    return draft


def train_step(
    model: torch.nn.Module,
    draft: Eagle3Draft,
    target: FrozenTarget,
    batch: Batch,
    opt: torch.optim.Optimizer,
    steps: int,
    grad_clip: float,
    bf16: bool | None = None,
    sched: torch.optim.lr_scheduler.LRScheduler | None = None,
) -> tuple[torch.Tensor, list[StepStats]]:
    """One optimiser step of the TTT objective (`model`: TTTObjective(draft), DDP-wrapped under torchrun)."""
    device = batch.input_ids.device
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda" if bf16 is None else bf16):
        stats = model(target, batch, steps)
        loss = total_loss(stats)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(draft.parameters(), grad_clip)
    opt.step()
    if sched is not None:
        sched.step()
    return loss, stats


def evaluate(
    draft: Eagle3Draft,
    target: FrozenTarget,
    source: OfflineSource | OnlineSource,
    ids: list[str],
    steps: int,
    device: torch.device,
    dtype: torch.dtype,
) -> list[float]:
    """Per-step accuracy on samples (one sample per batch: no padding effects)."""
    batches = (source.batch([i], device, dtype)[0] for i in ids)
    with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
        return step_accuracy(draft, target, batches, steps)


def open_source(config: TrainConfig, device: torch.device, dtype: torch.dtype) -> OfflineSource | OnlineSource:
    from pipeline.train.source import OfflineSource, OnlineSource

    if config.online:
        assert config.build_dir is not None and config.model_dir is not None  # the config's validator says so
        return OnlineSource(config.build_dir, config.model_dir, config.layers, device, dtype, tp=config.tp)
    assert config.capture_dir is not None
    return OfflineSource(config.capture_dir)


def run_train(config: TrainConfig, catalog: Catalog | None = None) -> Path:
    rank, world = dist_info()
    if config.tp:
        # One target spans the ranks, so every rank runs every batch through it and gets the full taps; each
        # trains the same draft on them (no DDP: identical data), and rank 0 saves. The draft's step costs a
        # fraction of a large target's forward, so the repeats cost no wall time.
        rank, world, tp_rank = 0, 1, rank
    else:
        tp_rank = 0
    torch.manual_seed(config.seed)
    device = pick_device(config.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    source = open_source(config, device, dtype)
    manifest = source.manifest
    train_ids, held_ids = split_ids(source, config.heldout_every)
    lengths = source.lengths(train_ids)
    max_length = manifest.max_length or max(lengths.values(), default=0)
    target_dir = config.model_dir or Path(manifest.model_dir)  # --model: the target lives elsewhere here
    draft = build_draft(target_dir, manifest, source.vocab, max_length).to(device)
    target = FrozenTarget.from_model_dir(target_dir, manifest.rms_norm_eps).to(device, dtype)
    opt = torch.optim.AdamW([p for p in draft.parameters() if p.requires_grad], lr=config.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / config.warmup_steps) if config.warmup_steps else 1.0
    )
    train_dir = config.out_dir / "train"
    log_path, state_path = train_dir / "train_log.jsonl", train_dir / CHECKPOINT / STATE
    order = config.model_dump(mode="json")
    pos = load_state(state_path, draft, opt, sched, order) if config.resume else Position()
    if config.resume and rank == 0 and tp_rank == 0:
        cut_log(log_path, pos.step)
        print(f"resuming at step {pos.step} (epoch {pos.epoch}, batch {pos.next_batch})", flush=True)
    model: torch.nn.Module = TTTObjective(draft)
    if world > 1:  # gradients are all-reduced by DDP hooks because the objective runs through its forward
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)

    def rank_batches(epoch: int) -> list[list[str]]:
        batches = token_batches(lengths, config.batch_tokens, config.seed, epoch)
        return batches[: len(batches) // world * world][rank::world]  # DDP needs equal steps per rank

    saving = [0.0]  # seconds spent writing states and checkpoints, kept out of the throughput figure

    def save(epoch: int, next_batch: int) -> None:
        t = time.perf_counter()
        if rank == 0 and tp_rank == 0:
            save_state(state_path, draft, opt, sched, Position(step, epoch, next_batch), order)
            if next_batch == 0:  # the exportable checkpoint too, so a crash loses at most one epoch of it
                save_checkpoint(
                    train_dir / CHECKPOINT, draft, config, manifest, {"steps": step, "epoch": epoch}, held_ids
                )
        saving[0] += time.perf_counter() - t

    step, trained_tokens, t_loop = pos.step, 0, time.perf_counter()
    done = lambda: bool(config.max_steps) and step >= (config.max_steps or 0)  # noqa: E731
    bookkeeping = rank_dir(train_dir, rank, world) if tp_rank == 0 else train_dir / f"rank{tp_rank}"
    with StageRun("train", config, bookkeeping, catalog if tp_rank == 0 else None) as run, progress() as bar:
        run.seen(len(train_ids))
        run.tally("heldout", len(held_ids))
        for bad in source.bad:
            assert bad.problem is not None  # .bad holds the rows that have one
            run.drop(bad.problem, where={"id": bad.id, "row_index": bad.row_index, "field": bad.field})
        if pos.step:  # epoch-0 batches an earlier run trained: done, not lost
            first = rank_batches(0)[: pos.next_batch if pos.epoch == 0 else None]
            run.skipped("already_trained", sum(len(ids) for ids in first))
        task = bar.add_task("train", total=min(config.epochs * len(rank_batches(0)), config.max_steps or 10**12))
        bar.advance(task, step)
        for epoch in range(pos.epoch, config.epochs):
            batches = rank_batches(epoch)
            resume_at = (epoch + 1, 0)
            for k in range(pos.next_batch if epoch == pos.epoch else 0, len(batches)):
                ids = batches[k]
                t0 = time.perf_counter()
                batch, non_finite = source.batch(ids, device, dtype)
                for bad_id in non_finite:
                    run.drop("non_finite", where={"id": bad_id, "field": "hidden_states"})
                loss, stats = train_step(
                    model, draft, target, batch, opt, config.ttt_steps, config.grad_clip, sched=sched
                )
                step += 1
                trained_tokens += sum(lengths[i] for i in ids)
                if not torch.isfinite(loss):
                    raise DraftsetError(
                        f"training loss is {float(loss)} at step {step} (batch {ids[:3]}…)",
                        hint="lower --lr; resume from the last good state with --resume",
                    )
                bar.advance(task)
                if epoch == 0:
                    run.emitted(len(ids) - len(non_finite))
                if rank == 0 and tp_rank == 0 and (step % config.log_every == 0 or step == 1):
                    _log(log_path, step, epoch, loss, stats, time.perf_counter() - t0, ids)
                if config.save_every and step % config.save_every == 0:
                    save(epoch, k + 1)
                if done():
                    resume_at = (epoch, k + 1)
                    break
            save(*resume_at)
            if done():
                break
        if device.type == "cuda":
            torch.cuda.synchronize()
        loop_seconds = time.perf_counter() - t_loop - saving[0]  # batches (online: the target's forward) + steps
        # other ranks' share, the DDP remainder batch and batches past --max-steps: counted, not lost
        run.tally("not_trained_here", len(train_ids) - run.counts["out"] - run.counts.get("skipped_already_trained", 0))
        metrics = {
            "train_step_accuracy": evaluate(draft, target, source, train_ids[:64], config.ttt_steps, device, dtype),
            "heldout_step_accuracy": evaluate(draft, target, source, held_ids[:64], config.ttt_steps, device, dtype)
            if held_ids
            else None,
            "steps": step,
            "rank0_tokens": trained_tokens,
            "rank0_loop_seconds": round(loop_seconds, 3),
            "rank0_save_seconds": round(saving[0], 3),
        }
    ckpt = train_dir / CHECKPOINT
    if rank == 0 and tp_rank == 0:
        save_checkpoint(ckpt, draft, config, manifest, metrics, held_ids)
        from pipeline.train.export import export_draft

        export_draft(ckpt, config.out_dir)
    return ckpt


def _log(
    path: Path, step: int, epoch: int, loss: torch.Tensor, stats: list[StepStats], seconds: float, ids: list[str]
) -> None:
    entry = {
        "step": step,
        "epoch": epoch,
        "loss": round(float(loss.detach()), 5),
        "seconds": round(seconds, 4),
        "step_accuracy": [round(int(s.correct) / max(int(s.count), 1), 4) for s in stats],
        "batch": ids,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    print(f"step {step} loss {entry['loss']:.4f} acc@step {entry['step_accuracy']}", flush=True)


def save_checkpoint(
    ckpt: Path, draft: Eagle3Draft, config: TrainConfig, manifest: CaptureManifest, metrics: dict, held_ids: list[str]
) -> None:
    """Weights + the fully resolved config (train knobs, draft shape, capture manifest, held-out ids)."""
    from safetensors.torch import save_file

    ckpt.mkdir(parents=True, exist_ok=True)
    with atomic_path(ckpt / "draft.safetensors") as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in draft.state_dict().items()}, str(tmp))
    write_json_atomic(
        ckpt / "resolved.json",
        {
            "train": config.model_dump(mode="json"),
            "draft": draft.config.model_dump(mode="json"),
            "capture_manifest": manifest.model_dump(mode="json"),
            "metrics": metrics,
            "heldout_ids": held_ids,
        },
    )
