"""The error family. The CLI prints every `DraftsetError` as one line plus a `next:` hint, never a traceback.

`StageFailed` is the typed form for a stage run that ended badly: it carries the stage, its run id and its
counts, so a caller (the service, a test, a script) can act on the figures instead of parsing a message.
"""

from __future__ import annotations

from collections.abc import Mapping


class DraftsetError(Exception):
    """An error the user can act on. `hint` says what to do next."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class CatalogBusy(DraftsetError):
    """Another process holds the catalog's write lock."""


class CatalogReadOnly(DraftsetError):
    """A statement tried to write through the read-only SQL path."""


class StageFailed(DraftsetError):
    """A stage run failed; `counts` are its in/out/dropped_<reason>/errors at the moment it stopped."""

    def __init__(self, message: str, *, stage: str, run_id: str, counts: Mapping[str, int], hint: str | None = None):
        super().__init__(message, hint=hint)
        self.stage = stage
        self.run_id = run_id
        self.counts = dict(counts)


class ZeroOutput(StageFailed):
    """A stage got non-empty input and produced nothing: always a bug, never a silent pass."""


class QueryStopped(DraftsetError):
    """A statement was stopped before it finished: its time limit, its client gone, or shutdown."""
