"""hub_errors: one clear DraftsetError for a dead endpoint and for each typed Hub error."""

from __future__ import annotations

import time

import httpx2
import pytest
from huggingface_hub import hf_hub_download

from catalog.hub import HubRequestError, HubUnreachable, hub_errors, translate
from pipeline.servers.localhub import free_port


def test_dead_endpoint_fails_fast_with_the_fix():
    endpoint = f"http://127.0.0.1:{free_port()}"
    started = time.perf_counter()
    with pytest.raises(HubUnreachable) as err:
        with hub_errors(endpoint):
            raise AssertionError("the body must not run against a dead endpoint")
    assert time.perf_counter() - started < 2
    assert endpoint in str(err.value)
    assert "draftset hub serve tests/fixtures/hub" in err.value.hint


@pytest.mark.parametrize("endpoint", ["localhost:8790", "http://127.0.0.1:port", "ftp://127.0.0.1:21"])
def test_not_an_http_url(endpoint):
    with pytest.raises(HubUnreachable, match="not an http"):
        with hub_errors(endpoint):
            pass


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda api: api.dataset_info("acme/absent"), "dataset acme/absent not found on"),
        (lambda api: api.dataset_info("acme/chat-parquet", revision="f" * 40), "pinned revision of acme/chat-parquet"),
        (
            lambda api: api.list_repo_tree("acme/chat-parquet", path_in_repo="zzz", repo_type="dataset").__next__(),
            "file not found in acme/chat-parquet",
        ),
    ],
)
def test_typed_errors_become_one_message(api, mini_url, call, expected):
    with pytest.raises(HubRequestError) as err:
        with hub_errors(mini_url):
            call(api)
    assert expected in str(err.value) and mini_url in str(err.value) and err.value.hint


def test_gated_download_names_the_token_fix(mini_url, tmp_path):
    @hub_errors(mini_url, repo_id="gated-co/secret-logs")
    def fetch():
        return hf_hub_download(
            "gated-co/secret-logs",
            "data/train.jsonl",
            repo_type="dataset",
            endpoint=mini_url,
            cache_dir=tmp_path,
            token=False,
        )

    with pytest.raises(HubRequestError, match="is gated") as err:
        fetch()
    assert "HF_TOKEN" in err.value.hint


def test_token_never_in_the_message(mini_url):
    from huggingface_hub import HfApi

    secret = "hf_secret_value_123"
    with pytest.raises(HubRequestError) as err:
        with hub_errors(mini_url):
            HfApi(endpoint=mini_url, token=secret).dataset_info("acme/absent")
    assert secret not in str(err.value) + str(err.value.hint)


def test_connection_errors_deep_in_a_chain():
    # What datasets raises after huggingface_hub gave up: ConnectionError ← ... ← httpx2.ConnectError.
    try:
        try:
            raise httpx2.ConnectError("[Errno 111] Connection refused")
        except httpx2.ConnectError as inner:
            raise ConnectionError("Couldn't reach 'a/b' on the Hub (LocalEntryNotFoundError)") from inner
    except ConnectionError as outer:
        mapped = translate(outer, "http://127.0.0.1:1")
    assert isinstance(mapped, HubUnreachable) and "Connection refused" in str(mapped)


def test_other_errors_pass_through(mini_url):
    with pytest.raises(ValueError, match="unrelated"):
        with hub_errors(mini_url):
            raise ValueError("unrelated")
    assert translate(KeyError("x"), mini_url) is None
