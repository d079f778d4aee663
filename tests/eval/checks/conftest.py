"""A test that imports a FAKE `sglang` (test_serve_lint.py) leaves it in sys.modules, where every later check in
the same process would take it for an installed SGLang; with the suite split over xdist workers, "later" can
be test_draft_checks.py. Each test here starts with the sglang modules it found."""

from __future__ import annotations

import sys

import pytest


def _sglang_modules() -> set[str]:
    return {m for m in sys.modules if m == "sglang" or m.startswith("sglang.")}


@pytest.fixture(autouse=True)
def _drop_sglang_imported_here():
    before = _sglang_modules()
    yield
    for name in _sglang_modules() - before:
        del sys.modules[name]
