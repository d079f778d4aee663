"""Process-level helpers shared by capture, train and the checks: torchrun rank, device, progress bar."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from catalog.errors import DraftsetError


def dist_info() -> tuple[int, int]:
    """(rank, world_size) under torchrun; a process group is started for barriers when world > 1."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            if torch.cuda.is_available():
                # Bind this rank to its own GPU first: otherwise the current device stays cuda:0 on every rank
                # and NCCL barriers (and anything using the current device) pile onto GPU 0.
                local = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
                torch.cuda.set_device(local)
                dist.init_process_group("nccl", device_id=local)
            else:
                dist.init_process_group("gloo")
    return rank, world


def rank_dir(base: Path, rank: int, world: int) -> Path:
    """Where a rank keeps its stage bookkeeping (config/stats/quarantine): one dir per rank under torchrun."""
    return base if world == 1 else base / f"rank{rank}"


def pick_device(name: str = "auto"):
    import torch

    if name == "auto":
        name = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise DraftsetError(f"device {name} requested but CUDA is not available", hint="use --device cpu")
    return torch.device(name)


@contextmanager
def progress() -> Iterator:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  transient=True) as bar:
        yield bar
