"""Fixtures for the regeneration tests: fake OpenAI servers (instant and faulty) on loopback."""

from __future__ import annotations

import pytest

from tests.kits.fake_openai import Behaviour, RunningServer


@pytest.fixture()
def fake_server():
    """Factory: start a fake OpenAI server with the given Behaviour; all are stopped after the test."""
    started: list[RunningServer] = []

    def start(**behaviour) -> RunningServer:
        server = RunningServer(Behaviour(**behaviour))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def devserver_url(tmp_path_factory):
    """The REAL dev server (`draftset serve-dev`'s code) in front of a freshly built toy target."""
    from pipeline.model.toy import ToyConfig, init_toy
    from pipeline.servers.devserver import serve_in_thread

    model_dir = tmp_path_factory.mktemp("regen-toy") / "toy-target"
    init_toy(model_dir, ToyConfig(train_steps=0, seed=0))  # random weights: fast, and enough to answer
    running = serve_in_thread(model_dir)
    yield running.url
    running.stop()
