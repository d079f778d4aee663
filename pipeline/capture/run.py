"""The capture stage: run the target over built rows and store aux taps + verifier state (bf16).

A `Stage` (resume by id; a rerun into the same folder with another model, build, taps or dtype is refused
by name, or starts over with `fresh`). Runs without the catalog (GPU hosts): pass catalog=None. Under
torchrun each rank takes every world_size-th pending row and writes its own shards; rank 0 writes the manifest at the end.
With `tp=True` (a target larger than one GPU) the ranks instead load ONE copy of the target with
transformers' tensor parallelism (`tp_plan="auto"`), all run every batch together, and rank 0 writes.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from catalog.errors import DraftsetError
from pipeline.capture.config import CaptureConfig
from pipeline.capture.forward import capture_batch
from pipeline.capture.layers import LayerPlan
from pipeline.capture.manifest import (
    MANIFEST,
    CaptureCounts,
    CaptureManifest,
    hidden_bytes_per_token,
    model_config,
    model_revision,
    taps_for,
)
from pipeline.capture.rows import BuiltRow, read_build_rows
from pipeline.capture.runtime import dist_info, length_batches, pick_device, progress
from pipeline.capture.store import SHARD_GLOB, CaptureReader, ShardWriter
from pipeline.stage import CONFIG, Stage, StageRun, rank_dir, recorded_compat
from pipeline.target.template import model_template_sha256
from pipeline.target.tiktoken_convert import tokenizer_sha256

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


class CaptureStage(Stage[CaptureConfig]):
    """Resumes by sample id over every rank's shards; compatible on the model, the build, the taps and the
    forward dtype as resolved (a default `--layers` and the same ids given explicitly are one wiring)."""

    name = "capture"
    config_model = CaptureConfig
    resume_key = "id"

    def __init__(
        self,
        config: CaptureConfig,
        bookkeeping: Path,
        catalog: Any | None,
        *,
        plan: LayerPlan,
        rows: list[BuiltRow],
        device: torch.device,
        per_token: int,
        rank: int,
        world: int,
        writes: bool,
        fresh: bool = False,
    ):
        super().__init__(config, bookkeeping, catalog, fresh=fresh, rank_folder=False)
        self.plan, self.mine, self.device, self.per_token = plan, rows, device, per_token
        self.rank, self.world, self.writes = rank, world, writes  # writes: False on a tensor-parallel peer
        # the forward dtype as run: "auto" is bf16 on a GPU, fp32 on a CPU (a resume on the other would mix them)
        self.dtype = config.dtype if config.dtype != "auto" else ("bfloat16" if device.type == "cuda" else "float32")

    def inputs(self) -> list[Path]:
        return [self.config.build_dir]

    def compat_key(self) -> dict[str, Any]:
        model = self.config.model_dir
        return {
            "model": f"{Path(model).resolve()} @ {model_revision(model)}",
            "build": str(Path(self.config.build_dir).resolve()),
            "taps": list(self.plan.aux),
            "dtype": self.dtype,
        }

    def has_output(self) -> bool:
        return any(self.config.out_dir.glob(SHARD_GLOB))

    def already_done(self) -> set[str]:
        return set(CaptureReader(self.config.out_dir).ids())

    def outputs(self) -> list[str]:
        return sorted(p.name for p in self.config.out_dir.glob(SHARD_GLOB))

    def previous_keys(self) -> list[tuple[Path, dict[str, Any]]]:
        """Every rank's record: the shards of all ranks share one folder, so all must match."""
        if not self.has_output():
            return []
        out = self.config.out_dir
        records = [p for p in [out / CONFIG, *sorted(out.glob(f"rank*/{CONFIG}"))] if p.is_file()]
        return [(out, recorded_compat(p)) for p in records]

    def clear(self) -> None:
        if self.world > 1:  # every rank removing the shared folder would race the others' first shards
            raise DraftsetError(
                f"--fresh under torchrun cannot clear {self.config.out_dir} safely",
                hint="remove that folder first, then start the ranks",
            )
        if self.config.out_dir.exists():
            shutil.rmtree(self.config.out_dir)
        self.config.out_dir.mkdir(parents=True)

    def rows(self) -> list[BuiltRow]:
        return self.mine

    def process(self, rows: Iterable[BuiltRow], run: StageRun) -> dict[str, Any]:
        import torch

        from pipeline.target.load import load_target

        config, mine, device = self.config, list(rows), self.device
        pending = [r for r in mine if r.id not in self.done]
        preflight_disk(config.out_dir, sum(len(r.input_ids) for r in pending), self.per_token)
        _copy_vocab(config.build_dir, config.out_dir)
        run.seen(len(mine))
        run.skipped("already_captured", len(mine) - len(pending))
        for bad in pending:
            if bad.problem:
                run.drop(bad.problem, where={"id": bad.id, "row_index": bad.row_index, "field": bad.field})
        good = [r for r in pending if not r.problem]
        tp = config.tp and self.world > 1
        if good:
            model = load_target(config.model_dir, getattr(torch, self.dtype), tp=tp)
            if not tp:
                model = model.to(device)
            elif self.rank == 0:  # says that transformers did shard it (a silently replicated target would not)
                print(f"capture: target tensor-parallel over {getattr(model, 'tp_size', None)} ranks", flush=True)
            writer = (
                ShardWriter(config.out_dir, self.rank, config.shard_bytes, config.writer_threads)
                if self.writes
                else None
            )
            t0 = time.perf_counter()
            capture_rows(model, good, self.plan, device, config.batch_tokens, writer, run, f"capture r{self.rank}")
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
            tokens = sum(len(r.input_ids) for r in good)
            print(
                f"capture r{self.rank}: {tokens} tokens in {seconds:.2f} s = {tokens / seconds:,.0f} tok/s "
                f"(forward + copy + write, model load excluded)",
                flush=True,
            )
        if not self.writes:
            run.emitted(len(good))  # this rank computed them; rank 0 stored them
        return {"capture_manifest": MANIFEST, **self.compat_key()}


def run_capture(config: CaptureConfig, catalog: Any | None = None, *, fresh: bool = False) -> CaptureManifest:
    """Capture `config.build_dir` through the target; `fresh`: discard what `config.out_dir` already holds
    (otherwise it is resumed, and must have been made with the same model, build, taps and dtype)."""
    rank, world = dist_info()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    mcfg = model_config(config.model_dir)
    plan = LayerPlan.resolve(mcfg["num_hidden_layers"], config.layers)
    build_manifest, rows = read_build_rows(config.build_dir, vocab_size=mcfg["vocab_size"])
    if config.max_rows is not None:
        rows = rows[: config.max_rows]
    shard = not config.tp  # tensor parallel: every rank runs every row (one model across the GPUs)
    writes = shard or rank == 0
    bookkeeping = rank_dir(config.out_dir, rank, world if shard else 1) if writes else config.out_dir / f"rank{rank}"
    device = pick_device(config.device)
    per_token = hidden_bytes_per_token(len(plan.aux), mcfg["hidden_size"])
    stage = CaptureStage(
        config,
        bookkeeping,
        catalog if writes else None,
        plan=plan,
        rows=[r for i, r in enumerate(rows) if not shard or i % world == rank],
        device=device,
        per_token=per_token,
        rank=rank,
        world=world,
        writes=writes,
        fresh=fresh,
    )
    stage.run()
    if world > 1:
        import torch

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
        chat_template_sha256=build.get("chat_template_sha256") or model_template_sha256(model_dir),
        tokenizer_sha256=tokenizer_sha256(model_dir),
        system_prompt=build.get("system_prompt"),
        thinking=build.get("thinking"),
        max_length=build.get("max_length"),
        draft_vocab_size=build.get("draft_vocab_size"),
        build_dir=str(Path(build_dir).resolve()),
        **counts,
    )
