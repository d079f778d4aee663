"""The train stage: fit an EAGLE-3 draft on a capture (or online, on the target's forward), checkpoint
it with its resolved config, export.

Layer ids, hidden size and vocabulary all come from the capture manifest (online: the same manifest,
computed from the build and the target); the only knobs here are optimisation ones, and those left out come
from the target's recipe (train/recipes.py `resolved_config`, named in resolved.json). bf16 autocast on
GPU, fp32 on CPU; DDP under torchrun; resumable mid-epoch (train/resume.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from catalog.errors import DraftsetError
from catalog.io import atomic_path, write_json_atomic
from pipeline.build.vocab import draft_vocab
from pipeline.capture.manifest import CaptureManifest, model_config
from pipeline.capture.runtime import dist_info, pick_device, progress
from pipeline.stage import Stage, StageRun, rank_dir
from pipeline.train.config import TrainConfig, TTTAttention
from pipeline.train.data import split_ids, token_batches
from pipeline.train.draft_arch import DraftArch, draft_config_for
from pipeline.train.draft_model import Eagle3Draft
from pipeline.train.recipes import resolved_config
from pipeline.train.resume import STATE, Position, cut_log, load_state, save_state
from pipeline.train.schedule import lr_factor
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, StepStats, TTTObjective, step_accuracy, total_loss

if TYPE_CHECKING:
    from catalog import Catalog
    from pipeline.train.source import OfflineSource, OnlineSource

CHECKPOINT = "checkpoint"


def build_draft(
    target_dir: Path,
    manifest: CaptureManifest,
    vocab: dict,
    max_length: int,
    fc_norm: bool = False,
    norm_output: bool = False,
    draft_arch: DraftArch = "auto",
    intermediate_size: int | None = None,
) -> Eagle3Draft:
    """A draft shaped after the target's config.json, with the build's draft vocabulary (and the EAGLE-3.1
    options when asked); `draft_arch` auto: an MLA draft for a DeepSeek-V3-shaped target (train/draft_arch.py)."""
    mcfg = model_config(target_dir)
    n_aux, k = len(manifest.taps.aux), int(vocab["d2t"].numel())
    shape = draft_config_for(mcfg, draft_arch, n_aux, k, max_length, fc_norm, norm_output, intermediate_size)
    draft = Eagle3Draft(shape)
    if int(vocab["t2d"].numel()) != manifest.vocab_size:
        raise DraftsetError(
            f"vocab.safetensors t2d has {vocab['t2d'].numel()} entries, target vocab is {manifest.vocab_size}",
            hint="rebuild with the same tokenizer as the capture's target",
        )
    draft.d2t.copy_(vocab["d2t"].long())
    draft.t2d.copy_(vocab["t2d"].bool())
    return draft


def repicked(vocab: dict, k: int | None) -> dict:
    """The build's draft vocabulary, or the K most frequent tokens of its counts when `k` asks for another size."""
    if k is None or k == int(vocab["d2t"].numel()):
        return vocab
    if "token_counts" not in vocab:
        raise DraftsetError(
            "this build's vocab.safetensors has no token_counts to re-pick a draft vocabulary from",
            hint="leave draft_vocab_size unset, or rebuild with --draft-vocab-size K",
        )
    d2t, t2d = draft_vocab(vocab["token_counts"].numpy(), k)
    return {**vocab, "d2t": torch.from_numpy(d2t), "t2d": torch.from_numpy(t2d)}


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


def kernel_for(kernel: TTTAttention, device: torch.device) -> TTTAttention:
    """The training-time-test attention kernel, refused where it cannot train: torch 2.13's flex_attention has no
    backward on CPU (it raises NotImplementedError at the first step), so say so before any work is done."""
    if kernel == "flex" and device.type != "cuda":
        raise DraftsetError(
            f"--ttt-attention flex trains on CUDA only (torch has no flex_attention backward on {device.type})",
            hint="--ttt-attention sdpa (fused, any device) or eager",
        )
    return kernel


def open_source(config: TrainConfig, device: torch.device, dtype: torch.dtype) -> OfflineSource | OnlineSource:
    from pipeline.train.source import OfflineSource, OnlineSource

    if config.online:
        assert config.build_dir is not None and config.model_dir is not None  # the config's validator says so
        return OnlineSource(config.build_dir, config.model_dir, config.layers, device, dtype, tp=config.tp)
    assert config.capture_dir is not None
    return OfflineSource(config.capture_dir)


def out_of_time(started: float, max_seconds: float, device: torch.device) -> bool:
    """Whether `max_seconds` have passed since `started`, agreed by every rank: one rank stopping on its own
    clock while another enters the next step's collectives (DDP's gradient all-reduce, the tensor-parallel
    target's forward) would hang both; so the ranks stop together when any one of them is out of time."""
    late = time.perf_counter() - started >= max_seconds
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        flag = torch.tensor([float(late)], device=device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        late = bool(flag.item())
    return late


class TrainStage(Stage[TrainConfig]):
    """Training as a stage: counts, quarantine of bad samples, config/stats and a manifest in `<out>/train/`.

    Resume is mid-epoch from `trainer_state.pt` (train/resume.py refuses other batch-order settings), not by
    id, so the base's resume-by-id stays off. Under tensor parallelism every rank trains the same draft on
    the same taps and only rank 0 keeps books (the others count in `train/rank<k>/`, without the catalog)."""

    name = "train"
    config_model = TrainConfig

    def __init__(self, config: TrainConfig, catalog: Catalog | None = None):
        rank, world = dist_info()
        if config.tp:
            # One target spans the ranks, so every rank runs every batch through it and gets the full taps; each
            # trains the same draft on them (no DDP: identical data), and rank 0 saves. The draft's step costs a
            # fraction of a large target's forward, so the repeats cost no wall time.
            rank, world, tp_rank = 0, 1, rank
        else:
            tp_rank = 0
        self.rank, self.world, self.lead = rank, world, rank == 0 and tp_rank == 0  # lead: the rank that saves
        self.train_dir = config.out_dir / "train"
        bookkeeping = rank_dir(self.train_dir, rank, world) if tp_rank == 0 else self.train_dir / f"rank{tp_rank}"
        super().__init__(config, bookkeeping, catalog if tp_rank == 0 else None, rank_folder=False)
        torch.manual_seed(config.seed)
        self.device = pick_device(config.device)
        kernel = kernel_for(config.ttt_attention, self.device)  # refused before the data or the target is opened
        self.dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        self.source = open_source(config, self.device, self.dtype)
        self.manifest = manifest = self.source.manifest
        self.train_ids, self.held_ids = split_ids(self.source, config.heldout_every)
        self.lengths = self.source.lengths(self.train_ids)
        max_length = manifest.max_length or max(self.lengths.values(), default=0)
        target_dir = config.model_dir or Path(manifest.model_dir)  # --model: the target lives elsewhere here
        # The settings left out come from the target's recipe, before anything is built from them; the resolved
        # config is what the run records (config.json, resolved.json) and what a resume is checked against.
        earlier = self.train_dir / CHECKPOINT / "resolved.json"  # a resume goes on with what that run trained with
        interrupted = json.loads(earlier.read_text())["train"] if config.resume and earlier.is_file() else None
        config, line = resolved_config(
            config, target_dir, lambda batch_tokens: len(self.rank_batches(0, batch_tokens)), interrupted
        )
        self.config = config
        if self.lead:
            print(f"train: {line}", flush=True)
        vocab = repicked(self.source.vocab, config.draft_vocab_size)
        self.draft = build_draft(
            target_dir,
            manifest,
            vocab,
            max_length,
            config.fc_norm,
            config.norm_output,
            config.draft_arch,
            config.draft_intermediate_size,
        ).to(self.device)
        self.draft.use_ttt_attention(kernel)
        self.target = FrozenTarget.from_model_dir(target_dir, manifest.rms_norm_eps).to(self.device, self.dtype)
        self.opt = torch.optim.AdamW([p for p in self.draft.parameters() if p.requires_grad], lr=config.lr)
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda s: lr_factor(s, config.warmup_steps, self.total_steps(), config.schedule)
        )
        self.log_path, self.state_path = self.train_dir / "train_log.jsonl", self.train_dir / CHECKPOINT / STATE
        self.order = config.model_dump(mode="json")
        self.pos = (
            load_state(self.state_path, self.draft, self.opt, self.sched, self.order) if config.resume else Position()
        )
        if config.resume and self.lead:
            cut_log(self.log_path, self.pos.step)
            print(f"resuming at step {self.pos.step} (epoch {self.pos.epoch}, batch {self.pos.next_batch})", flush=True)
        self.model: torch.nn.Module = TTTObjective(self.draft)
        if world > 1:  # gradients are all-reduced by DDP hooks because the objective runs through its forward
            ids = [self.device] if self.device.type == "cuda" else None
            self.model = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.step = self.pos.step
        self.saving = 0.0  # seconds spent writing states and checkpoints, kept out of the throughput figure

    def inputs(self) -> list[Path]:
        folder = self.config.build_dir if self.config.online else self.config.capture_dir
        return [folder] if folder is not None else []

    def outputs(self) -> list[str]:
        ckpt = self.train_dir / CHECKPOINT
        return sorted(f"{CHECKPOINT}/{p.name}" for p in ckpt.glob("*") if p.is_file()) if ckpt.is_dir() else []

    def has_output(self) -> bool:
        return False  # resumed from the saved state (ORDER_KEYS checked there), never merged by id

    def total_steps(self) -> int | None:
        """The run's optimizer steps (epochs × this rank's batches, capped by max_steps), for the cosine tail;
        None under constant, so the batching is not computed for nothing."""
        if self.config.schedule == "constant":
            return None
        if not hasattr(self, "_total"):
            self._total = min(self.config.epochs * len(self.rank_batches(0)), self.config.max_steps or 10**12)
        return self._total

    def rank_batches(self, epoch: int, batch_tokens: int | None = None) -> list[list[str]]:
        """This rank's batches of `epoch` (at `batch_tokens`, by default the config's)."""
        batches = token_batches(self.lengths, batch_tokens or self.config.batch_tokens, self.config.seed, epoch)
        return batches[: len(batches) // self.world * self.world][self.rank :: self.world]  # DDP: equal steps

    def save(self, epoch: int, next_batch: int) -> None:
        t = time.perf_counter()
        if self.lead:
            pos = Position(self.step, epoch, next_batch)
            save_state(self.state_path, self.draft, self.opt, self.sched, pos, self.order)
            if next_batch == 0:  # the exportable checkpoint too, so a crash loses at most one epoch of it
                so_far = {"steps": self.step, "epoch": epoch}
                save_checkpoint(
                    self.train_dir / CHECKPOINT, self.draft, self.config, self.manifest, so_far, self.held_ids
                )
        self.saving += time.perf_counter() - t

    def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        config, source, pos, device = self.config, self.source, self.pos, self.device
        trained_tokens, t_loop = 0, time.perf_counter()
        last_save, first_step = t_loop, self.step

        def done() -> bool:
            late = bool(config.max_seconds) and out_of_time(t_loop, config.max_seconds or 0, device)
            return late or (bool(config.max_steps) and self.step >= (config.max_steps or 0))

        stopped = False  # by max_steps or max_seconds: the saved state resumes it
        run.seen(len(self.train_ids))
        run.tally("heldout", len(self.held_ids))
        for bad in source.bad:
            assert bad.problem is not None  # .bad holds the rows that have one
            run.drop(bad.problem, where={"id": bad.id, "row_index": bad.row_index, "field": bad.field})
        if pos.step:  # epoch-0 batches an earlier run trained: done, not lost
            first = self.rank_batches(0)[: pos.next_batch if pos.epoch == 0 else None]
            run.skipped("already_trained", sum(len(ids) for ids in first))
        with progress() as bar:
            total = min(config.epochs * len(self.rank_batches(0)), config.max_steps or 10**12)
            task = bar.add_task("train", total=total)
            bar.advance(task, self.step)
            for epoch in range(pos.epoch, config.epochs):
                batches = self.rank_batches(epoch)
                resume_at = (epoch + 1, 0)
                for k in range(pos.next_batch if epoch == pos.epoch else 0, len(batches)):
                    ids = batches[k]
                    t0 = time.perf_counter()
                    batch, non_finite = source.batch(ids, device, self.dtype)
                    for bad_id in non_finite:
                        run.drop("non_finite", where={"id": bad_id, "field": "hidden_states"})
                    loss, stats = train_step(
                        self.model, self.draft, self.target, batch, self.opt, config.ttt_steps, config.grad_clip,
                        sched=self.sched,
                    )  # fmt: skip
                    self.step += 1
                    trained_tokens += sum(self.lengths[i] for i in ids)
                    if not torch.isfinite(loss):
                        raise DraftsetError(
                            f"training loss is {float(loss)} at step {self.step} (batch {ids[:3]}…)",
                            hint="lower --lr; resume from the last good state with --resume",
                        )
                    bar.advance(task)
                    if epoch == 0:
                        run.emitted(len(ids) - len(non_finite))
                    if self.lead and (self.step % config.log_every == 0 or self.step == 1):
                        rate = (time.perf_counter() - t_loop) / max(self.step - first_step, 1)  # s a step, this run
                        eta = rate * max(total - self.step, 0)
                        _log(self.log_path, self.step, epoch, loss, stats, time.perf_counter() - t0, ids, total, eta)
                    # every save_every steps, and on a clock (the ranks agree, as for max_seconds), so a kill of a
                    # long CPU run loses minutes of it, not hours
                    timed = bool(config.save_every_s) and out_of_time(last_save, config.save_every_s, device)
                    if (config.save_every and self.step % config.save_every == 0) or timed:
                        self.save(epoch, k + 1)
                        last_save = time.perf_counter()
                    if done():
                        resume_at, stopped = (epoch, k + 1), True
                        break
                self.save(*resume_at)
                if stopped:
                    break
        if device.type == "cuda":
            torch.cuda.synchronize()
        loop_seconds = time.perf_counter() - t_loop - self.saving  # batches (online: the target's forward) + steps
        # other ranks' share, the DDP remainder batch and batches past --max-steps: counted, not lost
        trained = run.counts["out"] + run.counts.get("skipped_already_trained", 0)
        run.tally("not_trained_here", len(self.train_ids) - trained)

        def evaluate_on(ids: list[str]) -> list[float]:
            return evaluate(self.draft, self.target, source, ids[:64], config.ttt_steps, device, self.dtype)

        metrics: dict[str, Any] = {
            "train_step_accuracy": evaluate_on(self.train_ids),
            "heldout_step_accuracy": evaluate_on(self.held_ids) if self.held_ids else None,
            "steps": self.step,
            "complete": not stopped,  # every epoch trained (False: stopped early, `resume` goes on)
            "rank0_tokens": trained_tokens,
            "rank0_loop_seconds": round(loop_seconds, 3),
            "rank0_save_seconds": round(self.saving, 3),
            "longest_training_row": max(self.lengths.values(), default=0),  # the draft's trained positions
        }
        metrics["warnings"] = accuracy_warnings(metrics)
        for line in metrics["warnings"] if self.lead else []:
            print(f"warning: {line}", flush=True)
        if self.lead:  # the final checkpoint, before the base writes the manifest that lists it
            save_checkpoint(self.train_dir / CHECKPOINT, self.draft, config, self.manifest, metrics, self.held_ids)
        return {"checkpoint": CHECKPOINT, "metrics": metrics}


def run_train(config: TrainConfig, catalog: Catalog | None = None) -> Path:
    """Train (or resume, with `config.resume`), then export the draft into `config.out_dir`."""
    stage = TrainStage(config, catalog)
    stage.run()
    ckpt = stage.train_dir / CHECKPOINT
    if stage.lead:
        from pipeline.train.export import export_draft

        export_draft(ckpt, config.out_dir)
    return ckpt


NEAR_ZERO = 0.02  # held-out first-step accuracy below this: the draft predicts (almost) nothing


def accuracy_warnings(metrics: dict[str, Any]) -> list[str]:
    """What a user must hear before checking or serving the draft: a held-out first-step accuracy near zero
    (too few steps, a wrong learning rate, or rows the target did not write) is a draft worth nothing."""
    held = metrics.get("heldout_step_accuracy") or metrics.get("train_step_accuracy") or []
    if not held or held[0] >= NEAR_ZERO:
        return []
    which = "held-out" if metrics.get("heldout_step_accuracy") else "train"
    how = (
        "the run stopped early: train it on with --resume"
        if not metrics.get("complete")
        else ("train longer (more --epochs or data) or change --lr; `draftset check draft` will find no speed-up")
    )
    return [
        f"{which} accuracy at step 0 is {held[0]:.3f} after {metrics.get('steps', 0)} steps (below {NEAR_ZERO}): "
        f"this draft predicts almost nothing; {how}"
    ]


def _log(
    path: Path,
    step: int,
    epoch: int,
    loss: torch.Tensor,
    stats: list[StepStats],
    seconds: float,
    ids: list[str],
    total: int = 0,
    eta_s: float | None = None,
) -> None:
    entry = {
        "step": step,
        "epoch": epoch,
        "loss": round(float(loss.detach()), 5),
        "seconds": round(seconds, 4),
        "step_accuracy": [round(int(s.correct) / max(int(s.count), 1), 4) for s in stats],
        "batch": ids,
        "total_steps": total,
        "eta_s": None if eta_s is None else round(eta_s, 1),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    left = f" · step {step}/{total}, ETA {_hms(eta_s)}" if total and eta_s is not None else ""
    print(f"step {step} loss {entry['loss']:.4f} acc@step {entry['step_accuracy']}{left}", flush=True)


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


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
