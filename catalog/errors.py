"""User-facing errors. The CLI prints these as one line plus a hint, never a traceback."""


class DraftsetError(Exception):
    """An error the user can act on. `hint` says what to do next."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class CatalogBusy(DraftsetError):
    """Another process holds the catalog's write lock."""


class CatalogReadOnly(DraftsetError):
    """A statement tried to write through the read-only SQL path."""


class ZeroOutput(DraftsetError):
    """A stage got non-empty input and produced nothing: always a bug, never a silent pass."""
