"""Prompt lengths in target-tokenizer tokens, or an estimate that says it is one.

The `tokenizers` library reads the target's tokenizer.json directly: the same token counts as the
serving model, without importing transformers (kept out of the light install).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from catalog.errors import DraftsetError
from catalog.home import Home

ESTIMATE = "estimate:chars/4"


class TokenCounter:
    """Counts tokens with a tokenizer.json when one is available, else estimates chars/4."""

    def __init__(self, tokenizer_dir: Path | None):
        self.tokenizer_dir = tokenizer_dir
        self._tok = None
        if tokenizer_dir is not None:
            try:
                from tokenizers import Tokenizer
            except ImportError as exc:  # the light install has no tokenizers
                raise DraftsetError("counting target tokens needs the `tokenizers` package",
                                    hint="pip install 'draftset[model]', or leave out --tokenizer for the estimate") from exc

            path = Path(tokenizer_dir) / "tokenizer.json"
            if not path.is_file():
                raise DraftsetError(f"no tokenizer.json in {tokenizer_dir}",
                                    hint="pass --tokenizer DIR of a Hugging Face model folder, or leave it "
                                         "out to use the toy target / a chars/4 estimate")
            try:
                self._tok = Tokenizer.from_file(str(path))
            except Exception as exc:  # the Rust side raises a bare Exception on a bad file
                raise DraftsetError(f"cannot load {path}: {exc}") from exc

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
        return ESTIMATE if self._tok is None else f"tokenizer:{self.tokenizer_dir}"

    @property
    def is_estimate(self) -> bool:
        return self._tok is None

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if self._tok is None:
            return [(len(t) + 3) // 4 for t in texts]
        return [len(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]
