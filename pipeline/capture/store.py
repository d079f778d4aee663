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


@dataclass
class ShardWriter:
    """Buffers samples and writes a shard once `shard_bytes` are pending (and at close).

    Writes happen on one background thread so the GPU computes the next batch meanwhile; at most one
    shard is in flight (bounded memory), and a failed write re-raises on the next flush or at close.
    """

    directory: Path
    rank: int
    shard_bytes: int
    pending: dict = field(default_factory=dict)
    pending_bytes: int = 0
    written: list[Path] = field(default_factory=list)
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=1))
    _inflight: Future | None = None
    _seq: int | None = None

    def add(self, sample_id: str, tensors: dict) -> None:
        for name in FIELDS:
            t = tensors[name].contiguous()
            self.pending[f"{sample_id}.{name}"] = t
            self.pending_bytes += t.numel() * t.element_size()
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
    def _write(tensors: dict, path: Path) -> Path:
        from safetensors.torch import save_file

        from catalog.io import atomic_path

        try:
            with atomic_path(path) as tmp:
                save_file(tensors, str(tmp))
        except OSError as exc:
            from catalog.errors import DraftsetError

            raise DraftsetError(f"cannot write capture shard {path}: {exc.strerror or exc}",
                                hint="free disk space and re-run the same command: finished samples are kept "
                                     "and capture resumes by id") from exc
        return path

    def _wait(self) -> None:
        if self._inflight is not None:
            self.written.append(self._inflight.result())
            self._inflight = None

    def flush(self) -> None:
        self._wait()
        if self.pending:
            self._inflight = self._pool.submit(self._write, self.pending, self._next_path())
            self.pending, self.pending_bytes = {}, 0

    def close(self) -> None:
        self.flush()
        self._wait()
        self._pool.shutdown()
