"""The fixture Hub (tests/fixtures/hub) through HF_ENDPOINT with the real, unmodified clients.

Counts come from tests/fixtures/expected.py, so they follow the generator, not this file.
"""

from __future__ import annotations

import httpx
import pytest

from tests.fixtures.expected import ALL_REPOS, EXPECTED

GATED = sorted(r for r, e in EXPECTED.items() if e.gated)
UNREADABLE = {"broken-org/malformed-jsonl"}  # malformed JSON lines: the viewer must report, not crash


@pytest.fixture(scope="module")
def hf(hub_url):
    import datasets
    from huggingface_hub import HfApi

    datasets.disable_progress_bars()
    return HfApi(token=False)  # endpoint from HF_ENDPOINT, as any project code gets it


def test_every_fixture_repo_is_listed_with_card_tags(hf):
    listed = {d.id: d for d in hf.list_datasets(full=True)}
    assert set(listed) == ALL_REPOS
    assert sorted(r for r, d in listed.items() if d.gated) == GATED
    assert all(d.gated == "auto" for r, d in listed.items() if r in GATED)
    assert "license:mit" in listed["h4-mini/ultrachat-mini"].tags
    assert not any(t.startswith("license:") for t in listed["nolicense/scraped-chat"].tags)
    french = {d.id for d in hf.list_datasets(language="fr")}
    assert "fr-only/french-chat" in french and "h4-mini/ultrachat-mini" not in french
    by_downloads = [d.downloads for d in hf.list_datasets(sort="downloads", limit=10)]
    assert by_downloads == sorted(by_downloads, reverse=True) and by_downloads[0] > by_downloads[-1]


@pytest.mark.parametrize("repo_id", sorted(set(EXPECTED) - UNREADABLE))
def test_viewer_rows_match_expected(hub_url, repo_id):
    exp = EXPECTED[repo_id]
    size = httpx.get(
        f"{hub_url}/viewer/size", params={"dataset": repo_id}, headers={"Authorization": "Bearer any"}
    ).json()
    counts = {(s["config"], s["split"]): s["num_rows"] for s in size["size"]["splits"]}
    assert counts[(exp.config, exp.split)] == exp.n_rows and size["failed"] == []


def test_malformed_repo_is_a_viewer_error_but_downloads(hub_url):
    repo = "broken-org/malformed-jsonl"
    rows = httpx.get(f"{hub_url}/viewer/first-rows", params={"dataset": repo, "config": "default", "split": "train"})
    assert rows.status_code == 500 and "error" in rows.json()
    raw = httpx.get(f"{hub_url}/datasets/{repo}/resolve/main/data/train.jsonl")
    assert raw.status_code == 200 and raw.content.count(b"\n") >= EXPECTED[repo].n_rows - 1


def test_wrong_types_show_as_json_text_like_load_dataset(hub_url):
    body = httpx.get(
        f"{hub_url}/viewer/first-rows",
        params={"dataset": "wrongtypes-org/wrong-column-types", "config": "default", "split": "train"},
    ).json()
    assert {r["row"]["messages"] is None or isinstance(r["row"]["messages"], str) for r in body["rows"]} == {True}


@pytest.mark.parametrize(
    "repo_id",
    [
        "sharegpt-lab/sharegpt-vicuna-mini",
        "h4-mini/ultrachat-mini",
        "glaive-mini/code-assistant-mini",
        "moonshot-fans/kimi-k2-chat-native",
        "swegym-mini/openhands-trajectories-mini",
    ],
)
def test_load_dataset(hf, repo_id):
    import datasets

    exp = EXPECTED[repo_id]
    ds = datasets.load_dataset(repo_id, exp.config, split=exp.split)
    assert ds.num_rows == exp.n_rows


def test_load_dataset_streaming_and_configs(hf):
    import datasets

    exp = EXPECTED["mot-mini/mixture-of-thoughts-mini"]
    assert datasets.get_dataset_config_names("mot-mini/mixture-of-thoughts-mini") == ["all", "code", "math"]
    stream = datasets.load_dataset("mot-mini/mixture-of-thoughts-mini", "all", split="train", streaming=True)
    assert sum(1 for _ in stream) == exp.n_rows
    assert datasets.get_dataset_split_names("swesmith-mini/swe-smith-trajectories-mini") == ["tool", "xml"]
    assert datasets.get_dataset_split_names("h4-mini/ultrachat-mini") == ["train_sft", "test_sft"]
    assert datasets.get_dataset_split_names("opencode-mini/opencodeinstruct-mini", "train") == ["train"]


def test_gated_fixture_needs_a_token(hf, tmp_path):
    import datasets
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import GatedRepoError

    exp = EXPECTED["gated-lab/private-agent-logs"]
    with pytest.raises(GatedRepoError):
        hf_hub_download(exp.repo_id, exp.data_files[0], repo_type="dataset", token=False, cache_dir=tmp_path)
    assert datasets.load_dataset(exp.repo_id, split="train", token="hf_any").num_rows == exp.n_rows


def test_dataset_card_load(hf):
    from huggingface_hub import DatasetCard

    card = DatasetCard.load("kimi-traj/deepswe-kimi-k2-trajectories-mini")
    assert card.data.license == "mit" and "Kimi-K2" in card.text


def test_load_dataset_errors_become_one_message(hf, hub_url, tmp_path):
    import datasets

    from catalog.hub import HubRequestError, hub_errors

    with pytest.raises(HubRequestError, match=f"dataset nobody/nothing not found on {hub_url}"):
        with hub_errors():  # endpoint: HF_ENDPOINT as huggingface_hub read it
            datasets.load_dataset("nobody/nothing")
    with pytest.raises(HubRequestError, match="gated-lab/private-agent-logs on .* is gated"):
        with hub_errors():
            datasets.load_dataset("gated-lab/private-agent-logs", split="train", cache_dir=str(tmp_path))
