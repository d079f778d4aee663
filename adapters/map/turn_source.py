"""What a layout reader needs of TurnReader: the spec, the caller's error type and the shared turn and text rules.

A Protocol, so that the layout modules (spoken_turns.py, column_turns.py) read through TurnReader without importing
turns.py, which imports them: the arrows run one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from adapters.spec import AdapterSpec


class TurnSource(Protocol):
    spec: AdapterSpec
    error: type
    native: bool

    @property
    def role_map(self) -> Mapping[str, str]: ...  # read-only here: TurnReader's values are the role literals

    def get(self, turn: dict[str, Any], key: str | None) -> Any: ...

    def turn(
        self,
        role: str,
        content: str,
        calls: list | None,
        train: bool | None,
        parts: list | None,
        where: str,
        **extra: Any,
    ) -> dict[str, Any]: ...

    def content(self, value: Any, field: str, allow_empty: bool = False) -> tuple[str, list | None]: ...

    def text(self, value: Any, field: str, allow_empty: bool = False) -> str: ...
