"""Capture shards: per-sample tensors in safetensors files, written atomically, read lazily.

Keys are `<sample id>.<field>` with fields aux [L, n_aux*H] bf16, last [L, H] bf16, input_ids [L] int32
and loss_mask [L] int8. A shard is renamed into place only when complete, so the ids found in shards
are exactly the finished samples (resume by id).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.capture.forward import HostBatch

FIELDS = ("aux", "last", "input_ids", "loss_mask")
SHARD_GLOB = "shard-*.safetensors"


def shard_ids(path: Path) -> list[str]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return sorted({k.rsplit(".", 1)[0] for k in f.keys()})


class CaptureReader:
    """Index of every sample in a capture dir; tensors are read on demand."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.where: dict[str, Path] = {}
        for shard in sorted(self.directory.glob(SHARD_GLOB)):
            for sample_id in shard_ids(shard):
                self.where[sample_id] = shard

    def ids(self) -> list[str]:
        return sorted(self.where)

    def load(self, sample_id: str, fields: tuple[str, ...] = FIELDS) -> dict:
        from safetensors import safe_open

        with safe_open(str(self.where[sample_id]), framework="pt") as f:
            return {name: f.get_tensor(f"{sample_id}.{name}") for name in fields}

    def items(self, fields: tuple[str, ...] = FIELDS) -> Iterator[tuple[str, dict]]:
        """Every sample, shard by shard (each shard opened once), reading only `fields`."""
        from safetensors import safe_open

        by_shard: dict[Path, list[str]] = {}
        for sample_id in self.ids():
            by_shard.setdefault(self.where[sample_id], []).append(sample_id)
        for shard, members in by_shard.items():
            with safe_open(str(shard), framework="pt") as f:
                for sample_id in members:
                    yield sample_id, {name: f.get_tensor(f"{sample_id}.{name}") for name in fields}

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        return self.items()


SAFETENSORS_DTYPES = {
    "torch.bfloat16": "BF16",
    "torch.float32": "F32",
    "torch.int32": "I32",
    "torch.int8": "I8",
    "torch.bool": "BOOL",
    "torch.int64": "I64",
}


def write_shard(path: Path, tensors: list[tuple[str, Any]]) -> Path:
    """Write (key, contiguous CPU tensor) pairs as one safetensors file, atomically.

    Serialised here rather than by `safetensors.save_file` so each tensor goes to the file straight from
    its slice of the pinned batch buffer: no per-row clone, no in-memory copy of the whole shard, and
    the GIL is released during each write, so several writer threads overlap. The layout is the
    safetensors spec (u64 header length, JSON header padded to 8 bytes, data in header order)."""
    import json
    import struct

    import torch

    from catalog.io import atomic_path

    header, offset = {}, 0
    for key, t in tensors:
        n = t.numel() * t.element_size()
        header[key] = {
            "dtype": SAFETENSORS_DTYPES[str(t.dtype)],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + n],
        }
        offset += n
    header["__metadata__"] = {"format": "pt"}
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(blob)) + blob)
            for _, t in tensors:
                if t.numel():
                    f.write(memoryview(t.reshape(-1).view(torch.uint8).numpy()))
    except OSError as exc:
        from catalog.errors import DraftsetError

        raise DraftsetError(
            f"cannot write capture shard {path}: {exc.strerror or exc}",
            hint="free disk space and re-run the same command: finished samples are kept and capture resumes by id",
        ) from exc
    return path


@dataclass
class ShardWriter:
    """Writes captured batches (forward.HostBatch) to shards on `threads` background threads.

    Batches are grouped until `shard_bytes` are pending, then one thread waits for their device→host
    copy and writes them, while the GPU goes on with the next batches. At most `threads + 1` shards
    are in flight (bounded pinned memory); a failed write re-raises at the next flush or at close.
    Rows whose states are not finite are never written: `non_finite` lists them after close().
    """

    directory: Path
    rank: int
    shard_bytes: int
    threads: int = 4
    pending: list = field(default_factory=list)
    pending_bytes: int = 0
    written: list[Path] = field(default_factory=list)
    kept: int = 0
    non_finite: list = field(default_factory=list)
    _pool: ThreadPoolExecutor | None = None
    _inflight: list[Future] = field(default_factory=list)
    _seq: int | None = None

    def add_batch(self, batch: HostBatch) -> None:
        self.pending.append(batch)
        self.pending_bytes += batch.aux.numel() * 2 + batch.last.numel() * 2
        if self.pending_bytes >= self.shard_bytes:
            self.flush()

    def _next_path(self) -> Path:
        if self._seq is None:
            existing = self.directory.glob(f"shard-r{self.rank:03d}-*.safetensors")
            self._seq = 1 + max((int(p.stem.rsplit("-", 1)[1]) for p in existing), default=-1)
        else:
            self._seq += 1
        return self.directory / f"shard-r{self.rank:03d}-{self._seq:05d}.safetensors"

    @staticmethod
    def _write(batches: list, path: Path) -> tuple[Path | None, int, list]:
        import torch

        tensors, bad = [], []
        for b in batches:
            b.wait()
            finite = b.finite.tolist()
            for i, row in enumerate(b.rows):
                if not finite[i]:
                    bad.append(row)
                    continue
                n = len(row.input_ids)
                tensors += [
                    (f"{row.id}.aux", b.aux[i, :n]),
                    (f"{row.id}.last", b.last[i, :n]),
                    (f"{row.id}.input_ids", torch.tensor(row.input_ids, dtype=torch.int32)),
                    (f"{row.id}.loss_mask", torch.tensor(row.loss_mask, dtype=torch.int8)),
                ]
        return (write_shard(path, tensors) if tensors else None), len(tensors) // 4, bad

    def _collect(self, keep: int) -> None:
        while len(self._inflight) > keep:
            path, kept, bad = self._inflight.pop(0).result()
            if path is not None:
                self.written.append(path)
            self.kept += kept
            self.non_finite += bad

    def flush(self) -> None:
        if not self.pending:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="capture-write")
        self._collect(self.threads)  # bounded: wait for the oldest when all threads are busy
        self._inflight.append(self._pool.submit(self._write, self.pending, self._next_path()))
        self.pending, self.pending_bytes = [], 0

    def close(self) -> None:
        self.flush()
        self._collect(0)
        if self._pool is not None:
            self._pool.shutdown()
