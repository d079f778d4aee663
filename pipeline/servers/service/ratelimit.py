"""Per-user rate limits on the expensive routes (find, SQL, contract tests): a token bucket each.

A bucket holds `burst` requests and refills at `per_minute`; an empty bucket answers 429 with
Retry-After, so a script in a loop slows down instead of queueing work for everyone. Buckets live in
this process's memory (a restart forgives everyone, which is harmless).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from pipeline.servers.service.auth import ApiError
from pipeline.servers.service.users import User


@dataclass(frozen=True)
class Rate:
    per_minute: float
    burst: int


# What one user may start. Find and tests start jobs (minutes of work each); SQL is bounded per
# statement, so its rate only stops a tight loop.
RATES: dict[str, Rate] = {
    "find": Rate(per_minute=6, burst=3),
    "test": Rate(per_minute=20, burst=10),
    "sql": Rate(per_minute=120, burst=30),
}


class RateLimits:
    def __init__(self, rates: dict[str, Rate] | None = None):
        self.rates = rates or RATES
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (user, kind) -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, user: User, kind: str) -> None:
        """Spend one request of `kind` for `user`, or raise 429 saying when to retry."""
        rate = self.rates[kind]
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.get((user.name, kind), (float(rate.burst), now))
            tokens = min(float(rate.burst), tokens + (now - at) * rate.per_minute / 60.0)
            if tokens < 1.0:
                wait = math.ceil((1.0 - tokens) * 60.0 / rate.per_minute)
                self._buckets[(user.name, kind)] = (tokens, now)
                raise ApiError(
                    429,
                    f"too many {kind} requests from {user.name} (at most {rate.per_minute:g} a minute, "
                    f"{rate.burst} at once)",
                    f"retry in {wait} s",
                    retry_after=wait,
                )
            self._buckets[(user.name, kind)] = (tokens - 1.0, now)
