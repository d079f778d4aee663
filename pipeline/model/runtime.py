"""CPU threading for the toy target's tiny matrices."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch ops on one intra-op thread, then restore the setting.

    64-wide matrices gain nothing from intra-op threads, and OpenMP spin-waiting collapses when the
    cores are shared: a training step of the toy took 5 s with 2 threads and 0.25 s with 1 thread on a
    2-core machine at load 9 (measured while building this).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
