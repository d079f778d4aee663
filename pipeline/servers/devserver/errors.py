"""The dev server's refusal of a request: its own module, raised by the engine and the constrained decoder alike."""

from __future__ import annotations


class RequestError(ValueError):
    """A request the server refuses (HTTP 400), with a message that says why."""
