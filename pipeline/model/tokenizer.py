"""Train the toy target's byte-level BPE tokenizer (the `tokenizers` library) and wrap it for transformers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pipeline.model.template import CHAT_TEMPLATE, END_OF_TURN, SPECIAL_TOKENS

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def train_tokenizer(texts: Iterable[str], vocab_size: int = 3000) -> PreTrainedTokenizerFast:
    """A byte-level BPE over `texts` with the Kimi-style special tokens; returns a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable: no <unk> ever
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=END_OF_TURN,
        pad_token="<|pad|>",
        bos_token=None,
        unk_token=None,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (END_OF_TURN, "<|pad|>")],
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped
