"""The error family. The CLI prints every `DraftsetError` as one line plus a `next:` hint, never a traceback.

`StageFailed` is the typed form for a stage run that ended badly: it carries the stage, its run id and its
counts, so a caller (the service, a test, a script) can act on the figures instead of parsing a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar


class DraftsetError(Exception):
    """An error the user can act on. `hint` says what to do next. `http_status` is what the service answers
    with it: the error's kind decides, never its wording (a subclass sets its own)."""

    http_status: ClassVar[int] = 400

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class NotFound(DraftsetError):
    """The named thing (an adapter, a user, a row, a flag) does not exist."""

    http_status = 404


class CatalogBusy(DraftsetError):
    """Another process holds the catalog's write lock."""

    http_status = 503


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
    """A statement was stopped before it finished: its time limit (408), its memory limit (413: the same
    query will fail again), its client gone, or shutdown (503)."""

    http_status = 503

    def __init__(self, message: str, hint: str | None = None, *, timed_out: bool = False, out_of_memory: bool = False):
        super().__init__(message, hint=hint)
        self.timed_out, self.out_of_memory = timed_out, out_of_memory
        if timed_out:
            self.http_status = 408  # type: ignore[misc]  # per instance: the same kind, a different cause
        elif out_of_memory:
            self.http_status = 413  # type: ignore[misc]


class Interrupted(DraftsetError):
    """The user stopped the command (Ctrl-C); what it had finished is kept. The CLI exits 130, as a shell does
    for SIGINT, not 1."""

    exit_code: ClassVar[int] = 130
