"""A small hub built in a temp folder and served on its own port (independent of tests/fixtures/hub).

Tests against it pass `endpoint=` explicitly to the real clients; calls that only read HF_ENDPOINT
(load_dataset, DatasetCard.load) are tested against the fixture Hub via the `hub_url` fixture.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# `tests.*` imports need the repo root on sys.path (lasting fix: pytest `pythonpath = ["."]`).
_ROOT = str(Path(__file__).resolve().parents[4])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from pipeline.servers.localhub import serve_in_thread  # noqa: E402
from tests.pipeline.servers.localhub import minihub  # noqa: E402


@pytest.fixture(scope="session")
def mini_root(tmp_path_factory) -> Path:
    return minihub.build(tmp_path_factory.mktemp("minihub"))


@pytest.fixture(scope="session")
def mini_url(mini_root) -> str:
    running = serve_in_thread(mini_root)
    yield running.url
    running.stop()


@pytest.fixture()
def api(mini_url):
    from huggingface_hub import HfApi

    return HfApi(endpoint=mini_url, token=False)
