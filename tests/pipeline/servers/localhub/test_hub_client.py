"""HubClient: one probe per endpoint for a while, and the same one-line errors for every caller."""

from __future__ import annotations

import socket
import threading

import pytest

from catalog.hub import HubClient, HubRequestError, HubUnreachable, probe
from pipeline.servers.localhub import free_port


def test_download_and_revision_through_the_local_hub(mini_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    hub = HubClient(mini_url, token=False)
    sha = hub.revision("acme/chat-parquet")
    assert len(sha) == 40
    files = [f for f in hub.api.list_repo_files("acme/chat-parquet", repo_type="dataset") if f.startswith("data/")]
    assert hub.download("acme/chat-parquet", files[0], sha).stat().st_size > 0


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda hub: hub.revision("acme/absent"), "dataset acme/absent not found on"),
        (
            lambda hub: hub.download("acme/chat-parquet", "data/nothing.parquet", "main"),
            "file not found in acme/chat-parquet",
        ),
        (lambda hub: hub.download("gated-co/secret-logs", "data/train.jsonl", "main"), "is gated"),
    ],
)
def test_failures_are_one_named_error(mini_url, call, expected):
    with pytest.raises(HubRequestError, match=expected) as err:
        call(HubClient(mini_url, token=False))
    assert err.value.hint


def test_dead_endpoint_is_one_line():
    with pytest.raises(HubUnreachable, match="cannot reach the Hub"):
        HubClient(f"http://127.0.0.1:{free_port()}").revision("acme/chat-parquet")


def test_a_command_probes_an_endpoint_once():
    # A bare listener that counts the connections it accepts: the probe is the only client here.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.getsockname()[1]}"
    try:
        probe.probes_forgotten()
        for _ in range(3):  # find: the CLI, the graph runner and ingest each ask before their first call
            HubClient(endpoint).probe()
        probe.probes_forgotten()
        HubClient(endpoint).probe()  # forgotten (or past the TTL): asked again
        deadline = threading.Event()
        for _ in range(50):
            if len(accepted) >= 2:
                break
            deadline.wait(0.02)
        assert len(accepted) == 2
    finally:
        server.close()
        for conn in accepted:
            conn.close()
