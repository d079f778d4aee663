"""Process-level helpers shared by capture, train and the checks: torchrun rank, device, progress bar,
padded batches."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from catalog.errors import DraftsetError
from pipeline.stage import torchrun_rank

if TYPE_CHECKING:
    import torch

T = TypeVar("T")


def dist_info() -> tuple[int, int]:
    """(rank, world_size) under torchrun; a process group is started for barriers when world > 1."""
    rank, world = torchrun_rank()
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


def pick_device(name: str = "auto") -> torch.device:
    import torch

    if name == "auto":
        name = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise DraftsetError(f"device {name} requested but CUDA is not available", hint="use --device cpu")
    return torch.device(name)


@contextmanager
def progress() -> Iterator:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
    ) as bar:
        yield bar


def length_batches(items: list[T], length: Callable[[T], int], budget: int) -> list[list[T]]:
    """Length-sorted batches whose padded size (longest × count) stays under `budget` tokens: less padding,
    fewer launches. A single item longer than the budget forms its own batch."""
    batches: list[list[T]] = []
    current: list[T] = []
    for item in sorted(items, key=length):
        if current and length(item) * (len(current) + 1) > budget:
            batches.append(current)
            current = []
        current.append(item)
    return batches + ([current] if current else [])


def end_dist() -> None:
    """Tear the process group down before exit (torch warns, and NCCL may hang at exit, without it)."""
    if "torch" not in sys.modules:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def exit_on_error(main: Callable[[], None]) -> None:
    """Run a `python -m` entry point (GPU hosts have no `draftset` CLI): a DraftsetError becomes one
    line plus what to do next and exit status 1, like the CLI, never a traceback. Ranks end cleanly."""
    try:
        main()
    except DraftsetError as exc:
        sys.exit(f"error: {exc}" + (f"\nnext: {exc.hint}" if exc.hint else ""))
    finally:
        end_dist()
