"""One toy target per test session (a few seconds to build), and a dev server in front of it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def toy_model_dir(tmp_path_factory):
    from pipeline.model.toy import ToyConfig, init_toy

    out = tmp_path_factory.mktemp("toy") / "toy-target"
    # An empty corpus folder: the built-in fallback text keeps the tokenizer small and the fixture fast.
    init_toy(out, ToyConfig(train_steps=4, batch_size=4, seed=0), hub_dir=tmp_path_factory.mktemp("no-corpus"))
    return out


@pytest.fixture(scope="session")
def devserver(toy_model_dir):
    from pipeline.servers.devserver import serve_in_thread

    running = serve_in_thread(toy_model_dir)
    yield running
    running.stop()


@pytest.fixture()
def client(devserver):
    import openai

    return openai.OpenAI(base_url=devserver.url, api_key="unused", max_retries=0, timeout=60)
