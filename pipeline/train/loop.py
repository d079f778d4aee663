"""The train stage: fit an EAGLE-3 draft on a capture, checkpoint it with its resolved config, export.

Layer ids, hidden size and vocabulary all come from the capture (manifest + vocab.safetensors); the
only knobs here are optimisation ones. bf16 autocast on GPU, fp32 on CPU; DDP under torchrun.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from catalog.errors import DraftsetError
from catalog.io import atomic_path, write_json_atomic
from pipeline.capture.manifest import CaptureManifest, model_config
from pipeline.capture.runtime import dist_info, pick_device, progress, rank_dir
from pipeline.capture.store import CaptureReader
from pipeline.stage import StageConfig, StageRun
from pipeline.train.data import lengths_of, split_ids, token_batches
from pipeline.train.draft_model import DraftConfig, Eagle3Draft
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import TTTObjective, collate, step_accuracy, total_loss

CHECKPOINT = "checkpoint"


class TrainConfig(StageConfig):
    capture_dir: Path
    out_dir: Path
    model_dir: Path | None = None     # target weights for embedding/head; default: the manifest's model_dir
    epochs: int = 1
    lr: float = 1e-4
    batch_tokens: int = 8192
    ttt_steps: int = 7
    heldout_every: int = 20
    grad_clip: float = 0.5
    seed: int = 0
    device: str = "auto"
    max_steps: int | None = None
    log_every: int = 10


def load_vocab(capture_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    path = Path(capture_dir) / "vocab.safetensors"
    if not path.exists():
        raise DraftsetError(f"no vocab.safetensors in {capture_dir} (capture copies it from the build)",
                            hint="re-run `draftset build` then `draftset capture`; the build writes the draft vocabulary")
    return load_file(str(path))


def build_draft(target_dir: Path, manifest: CaptureManifest, vocab: dict, max_length: int) -> Eagle3Draft:
    """A draft shaped after the target's config.json, with the build's draft vocabulary."""
    mcfg = model_config(target_dir)
    draft = Eagle3Draft(DraftConfig.from_target(mcfg, len(manifest.taps.aux), int(vocab["d2t"].numel()), max_length))
    if int(vocab["t2d"].numel()) != manifest.vocab_size:
        raise DraftsetError(f"vocab.safetensors t2d has {vocab['t2d'].numel()} entries, target vocab is "
                            f"{manifest.vocab_size}", hint="rebuild with the same tokenizer as the capture's target")
    draft.d2t.copy_(vocab["d2t"].long())
    draft.t2d.copy_(vocab["t2d"].bool())
    return draft


def train_step(model, draft: Eagle3Draft, target: FrozenTarget, batch, opt, steps: int, grad_clip: float,
               bf16: bool | None = None):
    """One optimiser step of the TTT objective (`model`: TTTObjective(draft), DDP-wrapped under torchrun)."""
    device = batch.input_ids.device
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda" if bf16 is None else bf16):
        stats = model(target, batch, steps)
        loss = total_loss(stats)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(draft.parameters(), grad_clip)
    opt.step()
    return loss, stats


def evaluate(draft, target, reader: CaptureReader, ids: list[str], steps: int, device, dtype) -> list[float]:
    """Per-step accuracy on captured samples (one sample per batch: no padding effects)."""
    batches = (collate([reader.load(i)]).to(device, dtype) for i in ids)
    with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
        return step_accuracy(draft, target, batches, steps)


def run_train(config: TrainConfig, catalog=None) -> Path:
    rank, world = dist_info()
    torch.manual_seed(config.seed)
    manifest = CaptureManifest.load(config.capture_dir)
    reader = CaptureReader(config.capture_dir)
    train_ids, held_ids = split_ids(reader, config.heldout_every)
    lengths = lengths_of(reader, train_ids)
    device = pick_device(config.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    max_length = manifest.max_length or max(lengths.values(), default=0)
    target_dir = config.model_dir or Path(manifest.model_dir)   # --model: the target lives elsewhere here
    draft = build_draft(target_dir, manifest, load_vocab(config.capture_dir), max_length).to(device)
    target = FrozenTarget.from_model_dir(target_dir, manifest.rms_norm_eps).to(device, dtype)
    model = TTTObjective(draft)
    if world > 1:  # gradients are all-reduced by DDP hooks because the objective runs through its forward
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    opt = torch.optim.AdamW([p for p in draft.parameters() if p.requires_grad], lr=config.lr)
    train_dir = config.out_dir / "train"
    log_path = train_dir / "train_log.jsonl"
    step = 0
    per_epoch = len(token_batches(lengths, config.batch_tokens, config.seed, 0)) // world
    with StageRun("train", config, rank_dir(train_dir, rank, world), catalog) as run, progress() as bar:
        run.seen(len(train_ids))
        run.tally("heldout", len(held_ids))
        task = bar.add_task("train", total=min(config.epochs * per_epoch, config.max_steps or 10**12))
        for epoch in range(config.epochs):
            batches = token_batches(lengths, config.batch_tokens, config.seed, epoch)
            batches = batches[: len(batches) // world * world][rank::world]  # DDP needs equal steps per rank
            for ids in batches:
                t0 = time.perf_counter()
                batch = collate([reader.load(i) for i in ids]).to(device, dtype)
                loss, stats = train_step(model, draft, target, batch, opt, config.ttt_steps, config.grad_clip)
                step += 1
                if not torch.isfinite(loss):
                    raise DraftsetError(f"training loss is {float(loss)} at step {step} (batch {ids[:3]}…)",
                                        hint="lower --lr; the last good checkpoint is in train/checkpoint")
                bar.advance(task)
                if epoch == 0:
                    run.emitted(len(ids))
                if rank == 0 and (step % config.log_every == 0 or step == 1):
                    _log(log_path, step, epoch, loss, stats, time.perf_counter() - t0)
                if config.max_steps and step >= config.max_steps:
                    break
            if rank == 0:  # a checkpoint per epoch, so a crash loses at most one epoch
                save_checkpoint(train_dir / CHECKPOINT, draft, config, manifest, {"steps": step, "epoch": epoch},
                                held_ids)
            if config.max_steps and step >= config.max_steps:
                break
        # other ranks' share, the DDP remainder batch and batches past --max-steps: counted, not lost
        run.tally("not_trained_here", len(train_ids) - run.counts["out"])
        metrics = {"train_step_accuracy": evaluate(draft, target, reader, train_ids[:64], config.ttt_steps, device, dtype),
                   "heldout_step_accuracy": evaluate(draft, target, reader, held_ids[:64], config.ttt_steps, device,
                                                     dtype) if held_ids else None,
                   "steps": step}
    ckpt = train_dir / CHECKPOINT
    if rank == 0:
        save_checkpoint(ckpt, draft, config, manifest, metrics, held_ids)
        from pipeline.train.export import export_draft

        export_draft(ckpt, config.out_dir)
    return ckpt


def _log(path: Path, step: int, epoch: int, loss, stats, seconds: float) -> None:
    entry = {"step": step, "epoch": epoch, "loss": round(float(loss.detach()), 5), "seconds": round(seconds, 4),
             "step_accuracy": [round(int(s.correct) / max(int(s.count), 1), 4) for s in stats]}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    print(f"step {step} loss {entry['loss']:.4f} acc@step {entry['step_accuracy']}", flush=True)


def save_checkpoint(ckpt: Path, draft: Eagle3Draft, config: TrainConfig, manifest: CaptureManifest,
                    metrics: dict, held_ids: list[str]) -> None:
    """Weights + the fully resolved config (train knobs, draft shape, capture manifest, held-out ids)."""
    from safetensors.torch import save_file

    ckpt.mkdir(parents=True, exist_ok=True)
    with atomic_path(ckpt / "draft.safetensors") as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in draft.state_dict().items()}, str(tmp))
    write_json_atomic(ckpt / "resolved.json", {
        "train": config.model_dump(mode="json"), "draft": draft.config.model_dump(mode="json"),
        "capture_manifest": manifest.model_dump(mode="json"), "metrics": metrics, "heldout_ids": held_ids})
