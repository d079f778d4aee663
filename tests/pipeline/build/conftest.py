"""An untrained toy target (tokenizer + config are all build needs) and helpers to write input shards."""

from __future__ import annotations

import pytest

from adapters.records import Conversation, Message, Source


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory):
    from pipeline.model.toy import ToyConfig, init_toy

    out = tmp_path_factory.mktemp("build-toy") / "toy-target"
    init_toy(out, ToyConfig(train_steps=0), hub_dir=tmp_path_factory.mktemp("no-corpus"))
    return out


@pytest.fixture(scope="session")
def tokenizer(toy_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(toy_dir)


def _conversation(cid: str, turns: list[tuple], mode: str = "native") -> Conversation:
    """turns: (role, content[, reasoning[, train]])."""
    messages = [
        Message(role=t[0], content=t[1], reasoning=t[2] if len(t) > 2 else None, train=t[3] if len(t) > 3 else None)
        for t in turns
    ]
    return Conversation(
        id=cid,
        source=Source(
            repo_id="hand/written",
            revision="0" * 40,
            config="default",
            split="train",
            row_index=int(cid.rsplit("-", 1)[-1]),
        ),
        category="general",
        mode=mode,
        messages=messages,
    )


@pytest.fixture(scope="session")
def conversation():
    """Factory for canonical conversations written by hand (ids end in -<row index>)."""
    return _conversation
