"""The one way draftset loads a target's tokenizer: for counting, build, regeneration partitions and the dev server.

A tokenizer.json can carry the truncation and padding it was last *used* with (training a tokenizer or a
model through transformers saves them): loaded as-is, every text measures exactly that length. The toy
target once shipped `truncation: 128, padding: Fixed 128`, so every prompt and answer "measured" 128 tokens.
Both loaders here turn truncation and padding off, and say what the file carried (`TokenizerFile.carried`),
so a report can state it instead of hiding it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.errors import DraftsetError


@dataclass
class TokenizerFile:
    """A `tokenizers.Tokenizer` that never truncates or pads, and what its file carried."""

    path: Path
    tokenizer: Any  # tokenizers.Tokenizer
    carried: str | None  # e.g. "truncation max_length=128, padding Fixed(128)"; None when the file was clean

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


def _describe(truncation: dict[str, Any] | None, padding: dict[str, Any] | None) -> str | None:
    parts = []
    if truncation:
        parts.append(f"truncation max_length={truncation.get('max_length')}")
    if padding:
        strategy = padding.get("strategy") or padding.get("length")
        parts.append(f"padding {strategy}")
    return ", ".join(parts) or None


def _untruncated(backend: Any) -> str | None:
    """Turn off truncation and padding on a `tokenizers.Tokenizer`; describe what was on."""
    carried = _describe(backend.truncation, backend.padding)
    backend.no_truncation()
    backend.no_padding()
    return carried


def load_tokenizer_json(where: Path | str) -> TokenizerFile:
    """`tokenizer.json` (or a folder holding one) through the `tokenizers` library: no transformers needed."""
    path = Path(where)
    if path.is_dir():
        path = path / "tokenizer.json"
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # the light install has no tokenizers
        raise DraftsetError(
            "counting target tokens needs the `tokenizers` package",
            hint="pip install 'draftset[model]', or leave out --tokenizer for the estimate",
        ) from exc
    if not path.is_file():
        raise DraftsetError(
            f"cannot load tokenizer {path}: no tokenizer.json there",
            hint="pass --tokenizer DIR of a Hugging Face model folder, or leave it "
            "out to use the toy target / a chars/4 estimate",
        )
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises a bare Exception on a bad file
        raise DraftsetError(
            f"cannot load tokenizer {path}: {exc}",
            hint="point --tokenizer at the target's model folder (tokenizer.json)",
        ) from exc
    return TokenizerFile(path, tokenizer, _untruncated(tokenizer))


def load_chat_tokenizer(model_dir: Path | str) -> Any:
    """The target's transformers tokenizer (chat template included), never remote code, never truncating."""
    model_dir = Path(model_dir)
    if not (model_dir / "tokenizer_config.json").is_file():
        raise DraftsetError(
            f"{model_dir} has no tokenizer_config.json",
            hint="point --model at the target's model dir (toy: draftset model init-toy DIR)",
        )
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
    except (ValueError, OSError, ImportError) as exc:  # one line, never a transformers traceback
        text = str(exc)
        if "trust_remote_code" in text or "remote code" in text or "custom code" in text:
            raise DraftsetError(
                f"the tokenizer in {model_dir} needs remote code (its own Python files); draftset "
                "never runs code from a model folder",
                hint="use a model folder whose tokenizer loads without code (a tokenizer.json), "
                "e.g. convert a tiktoken tokenizer first",
            ) from None
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise DraftsetError(
            f"cannot load the tokenizer in {model_dir}: {first}", hint="point --model at the target's model dir"
        ) from None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        _untruncated(backend)
    return tokenizer


def save_clean(tokenizer: Any) -> None:
    """Before saving a tokenizer that was used with truncation/padding (training): leave neither in the file."""
    _untruncated(tokenizer.backend_tokenizer)
