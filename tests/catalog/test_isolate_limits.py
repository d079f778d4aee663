"""A child that runs out of its memory cap blames the data (a compression bomb), not the card."""

from __future__ import annotations

import pytest

from catalog.errors import DraftsetError
from catalog.isolate import run_isolated


def _allocate_too_much() -> int:
    return len(bytearray(3 * 1024**3))  # over the 1 GiB cap below


def test_out_of_memory_in_the_child_names_the_limit_and_blames_the_files():
    with pytest.raises(DraftsetError) as info:
        run_isolated(_allocate_too_much, what="listing the configs of lab/bomb", memory=1024**3)
    assert "ran out of its 1,024 MiB memory limit" in str(info.value)
    assert "compression bomb" in (info.value.hint or "")
