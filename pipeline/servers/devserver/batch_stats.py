"""What the dev server's batch worker did, batch by batch: size, wait, seconds, tokens; a summary line every N.

Why: on an H200 a batched serve-dev answered ~12 rows/s where one `generate` at batch 2048 makes ~170; the
size of the batches it formed (and how long it waited for them) is what tells a gather window that closes
too early from a server that gets requests too slowly. `draftset serve-dev` prints the summary at INFO.
"""

from __future__ import annotations

import logging
import statistics
import threading
from collections import deque
from dataclasses import dataclass

log = logging.getLogger("draftset.devserver.batching")

SUMMARY_EVERY = 10  # batches per INFO summary line
HISTORY = 100_000  # batches kept for the bench and the tests (a few MB at most)


@dataclass(frozen=True)
class BatchStat:
    size: int
    wait_s: float  # from the oldest request's arrival in the queue to the batch's start
    gather_s: float  # of which the worker spent gathering (the rest: queued while the previous batch ran)
    run_s: float  # the `generate` itself
    tokens: int  # completion tokens answered


class BatchLog:
    """Thread-safe record of the batches run (the worker appends, the event loop or a test reads)."""

    def __init__(self, every: int = SUMMARY_EVERY):
        self.every = every
        self._lock = threading.Lock()
        self._history: deque[BatchStat] = deque(maxlen=HISTORY)
        self.batches = 0
        self.largest = 0

    def add(self, stat: BatchStat) -> None:
        with self._lock:
            self._history.append(stat)
            self.batches += 1
            self.largest = max(self.largest, stat.size)
            due = self.batches % self.every == 0
            recent = list(self._history)[-self.every :] if due else []
        log.debug(
            "batch %d: %d requests, oldest waited %.3f s (gathering %.3f s), ran %.3f s, %d tokens",
            self.batches,
            *_fields(stat),
        )
        if recent:
            log.info(summary(recent, first=self.batches - len(recent) + 1))

    def history(self) -> list[BatchStat]:
        with self._lock:
            return list(self._history)


def _fields(stat: BatchStat) -> tuple[int, float, float, float, int]:
    return stat.size, stat.wait_s, stat.gather_s, stat.run_s, stat.tokens


def summary(stats: list[BatchStat], first: int = 1) -> str:
    """One line over some batches: their sizes (mean, median, max), wait, run time and token rate."""
    sizes = [s.size for s in stats]
    run = sum(s.run_s for s in stats)
    tokens = sum(s.tokens for s in stats)
    return (
        f"batches {first}-{first + len(stats) - 1}: {sum(sizes)} requests, size mean {statistics.fmean(sizes):.1f} "
        f"median {statistics.median(sizes):g} max {max(sizes)}, wait mean "
        f"{statistics.fmean(s.wait_s for s in stats):.3f} s (gathering {statistics.fmean(s.gather_s for s in stats):.3f} s), run {run:.2f} s, "
        f"{tokens / run if run > 0 else 0.0:,.0f} tokens/s while running"
    )
