"""Token lengths in the target's tokens, or an estimate that says it is one.

Used by dedup and mix (the too_long/too_short filter), the plan's token estimates and the report. The
tokenizer comes from the one loader (pipeline/target/tokenizer.py): it never truncates or pads, so a
length is the length, and what the file carried is kept in `note` for the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from catalog.home import Home
from pipeline.target.tokenizer import TokenizerFile, load_tokenizer_json

ESTIMATE = "estimate:chars/4"


class TokenCounter:
    """Counts tokens with a tokenizer.json when one is available, else estimates chars/4."""

    def __init__(self, tokenizer_dir: Path | None):
        self.tokenizer_dir = tokenizer_dir
        self._file: TokenizerFile | None = None
        if tokenizer_dir is not None:
            self._file = load_tokenizer_json(Path(tokenizer_dir))

    @classmethod
    def resolve(cls, tokenizer: Path | str | None, home: Path) -> TokenCounter:
        """--tokenizer DIR, else the toy target under $DRAFTSET_HOME if built, else the estimate."""
        if tokenizer is not None:
            return cls(Path(tokenizer))
        toy = Home(home).toy_target
        return cls(toy if (toy / "tokenizer.json").is_file() else None)

    @property
    def method(self) -> str:
        """Recorded beside every length so an estimate is never mistaken for a token count."""
        return ESTIMATE if self._file is None else f"tokenizer:{self.tokenizer_dir}"

    @property
    def is_estimate(self) -> bool:
        return self._file is None

    @property
    def note(self) -> str | None:
        """What the tokenizer file carried that counting turned off (truncation/padding), if anything."""
        if self._file is None or self._file.carried is None:
            return None
        return f"{self._file.path} carries {self._file.carried}; turned off for counting"

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if self._file is None:
            return [(len(t) + 3) // 4 for t in texts]
        return self._file.count_many(list(texts))
