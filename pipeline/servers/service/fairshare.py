"""A fair share of the SQL console: a freed slot goes to the waiting user who has used the console least.

With first-come slots, four viewers looping slow statements keep the queue full of their own requests
and a fifth user waits behind all of them (4-5 s, or 503 once the wait passes the time limit). Here a
user's use is the seconds their statements held a slot, decaying with a half-life of USE_HALF_LIFE_S;
when a slot frees, the waiter with the least use gets it (ties: whoever waited longest). A user who
rarely queries therefore waits for at most the statements already running, however many other users
loop. (Each user runs one statement at a time: sqlgate.py refuses a second with 429.)

Runs on the event loop only (no locks): acquire and release are called from request handlers.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import anyio

USE_HALF_LIFE_S = 60.0


@dataclass
class _Waiter:
    order: int
    user: str
    granted: anyio.Event = field(default_factory=anyio.Event)


class FairShare:
    def __init__(self, slots: int, half_life_s: float = USE_HALF_LIFE_S):
        self.slots, self.free, self.half_life_s = slots, slots, half_life_s
        self._waiting: list[_Waiter] = []
        self._use: dict[str, tuple[float, float]] = {}  # user -> (slot-seconds, when last updated)
        self._order = itertools.count()

    def use_of(self, user: str, now: float | None = None) -> float:
        """`user`'s recent slot-seconds, decayed to `now`."""
        seconds, at = self._use.get(user, (0.0, 0.0))
        now = time.monotonic() if now is None else now
        return seconds * math.pow(0.5, (now - at) / self.half_life_s)

    def waiting(self) -> int:
        return len(self._waiting)

    async def acquire(self, user: str) -> None:
        """Wait for a slot (cancellable: a timeout around this gives up the place, or the slot if it came)."""
        if self.free > 0 and not self._waiting:
            self.free -= 1
            return
        waiter = _Waiter(next(self._order), user)
        self._waiting.append(waiter)
        try:
            await waiter.granted.wait()
        except BaseException:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif waiter.granted.is_set():  # the slot was handed over as the wait ended: pass it on
                self._hand_over()
            raise

    def release(self, user: str, held_s: float) -> None:
        """Give the slot back, charging `user` the `held_s` seconds it held it."""
        now = time.monotonic()
        self._use[user] = (self.use_of(user, now) + held_s, now)
        self._forget_idle(now)
        self._hand_over()

    def _hand_over(self) -> None:
        if not self._waiting:
            self.free += 1
            return
        now = time.monotonic()  # use as of now: a user charged while it waited has used more
        waiter = min(self._waiting, key=lambda w: (self.use_of(w.user, now), w.order))  # then the longest wait
        self._waiting.remove(waiter)
        waiter.granted.set()

    def _forget_idle(self, now: float) -> None:
        """Drop users whose use has decayed to nothing (the table stays the size of the active users)."""
        if len(self._use) > 64:
            self._use = {u: v for u, v in self._use.items() if self.use_of(u, now) > 0.01}
