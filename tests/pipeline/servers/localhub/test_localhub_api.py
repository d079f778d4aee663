"""The real huggingface_hub client against the local Hub (mini hub in tmp, explicit endpoint)."""

from __future__ import annotations

import httpx
import pytest
from huggingface_hub import HfFileSystem, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    GatedRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from pipeline.servers.localhub import serve_in_thread


def ids(infos):
    return [i.id for i in infos]


def test_list_search_author_filter(api):
    assert ids(api.list_datasets(search="acme")) == ["acme/chat-parquet", "acme/multi-config"]
    assert ids(api.list_datasets(search="CSV")) == ["beta/qa-csv"]
    assert ids(api.list_datasets(author="beta")) == ["beta/qa-csv", "beta/sharegpt-array"]
    assert ids(api.list_datasets(filter="license:cc-by-4.0")) == ["beta/qa-csv"]
    assert ids(api.list_datasets(task_categories="question-answering", language="fr")) == ["acme/multi-config"]
    assert ids(api.list_datasets(filter=["chat", "format:parquet"])) == ["acme/chat-parquet"]
    assert ids(api.list_datasets(gated=True)) == ["gated-co/secret-logs"]
    assert ids(api.list_datasets(search="nothing-like-this")) == []


def test_list_sort_descending_and_limit(api):
    assert [(i.id, i.downloads) for i in api.list_datasets(sort="downloads", limit=3)] == [
        ("beta/qa-csv", 5000),
        ("acme/chat-parquet", 500),
        ("acme/multi-config", 50),
    ]
    assert ids(api.list_datasets(sort="likes", limit=1)) == ["acme/multi-config"]


def test_list_full_and_expand(api):
    (info,) = api.list_datasets(search="chat-parquet", full=True)
    assert info.card_data.license == "mit" and info.card_data["x_likes"] == 7
    assert [s.rfilename for s in info.siblings] == [
        "README.md",
        "data/test_sft-00000.parquet",
        "data/train_sft-00000.parquet",
    ]
    assert "license:mit" in info.tags and len(info.sha) == 40
    (slim,) = api.list_datasets(search="qa-csv", expand=["downloads", "likes"])
    assert (slim.downloads, slim.likes, slim.tags, slim.sha) == (5000, 1, None, None)


def test_link_header_paging(mini_root):
    running = serve_in_thread(mini_root, page_size=2)
    try:
        response = httpx.get(running.url + "/api/datasets")
        assert len(response.json()) == 2 and 'rel="next"' in response.headers["link"]
        from huggingface_hub import HfApi

        everything = ids(HfApi(endpoint=running.url, token=False).list_datasets())
        assert everything == sorted(everything) and len(everything) == 7
        assert len(ids(HfApi(endpoint=running.url, token=False).list_datasets(author="acme"))) == 2
    finally:
        running.stop()


def test_dataset_info_revision_and_blobs(api):
    info = api.dataset_info("acme/chat-parquet", files_metadata=True)
    assert info.gated is False and info.downloads == 500
    sizes = {s.rfilename: (s.size, s.blob_id) for s in info.siblings}
    assert all(size > 0 and len(blob) == 40 for size, blob in sizes.values())
    assert api.dataset_info("acme/chat-parquet", revision=info.sha).sha == info.sha
    assert api.dataset_info("acme/chat-parquet", revision="main").sha == info.sha
    assert api.dataset_info("gated-co/secret-logs").gated == "auto"  # metadata stays visible


def test_tree_files_and_paths_info(api):
    assert api.list_repo_files("acme/multi-config", repo_type="dataset") == [
        "README.md",
        "code/part-0.jsonl",
        "math/train.jsonl",
    ]
    top = list(api.list_repo_tree("acme/multi-config", repo_type="dataset"))
    assert [(type(e).__name__, e.path) for e in top] == [
        ("RepoFolder", "code"),
        ("RepoFolder", "math"),
        ("RepoFile", "README.md"),
    ]
    inner = list(api.list_repo_tree("acme/multi-config", path_in_repo="math", repo_type="dataset"))
    assert [e.path for e in inner] == ["math/train.jsonl"]
    infos = api.get_paths_info("acme/multi-config", ["README.md", "code", "absent.txt"], repo_type="dataset")
    assert sorted((type(e).__name__, e.path) for e in infos) == [("RepoFile", "README.md"), ("RepoFolder", "code")]
    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree("acme/multi-config", path_in_repo="nope", repo_type="dataset"))


def test_exists(api):
    assert api.repo_exists("acme/chat-parquet", repo_type="dataset")
    assert not api.repo_exists("acme/absent", repo_type="dataset")
    assert api.file_exists("acme/chat-parquet", "README.md", repo_type="dataset")
    assert not api.file_exists("acme/chat-parquet", "missing.txt", repo_type="dataset")


def test_resolve_headers_and_range(mini_url, mini_root, api):
    info = api.dataset_info("beta/qa-csv", files_metadata=True)
    sha, blob = info.sha, {s.rfilename: s.blob_id for s in info.siblings}["train.csv"]
    url = f"{mini_url}/datasets/beta/qa-csv/resolve/main/train.csv"
    body = (mini_root / "beta/qa-csv/train.csv").read_bytes()
    head = httpx.head(url)
    assert head.status_code == 200 and head.headers["x-repo-commit"] == sha
    assert head.headers["etag"] == f'"{blob}"'
    assert int(head.headers["content-length"]) == len(body)
    assert not any(k.lower().startswith("x-xet") for k in head.headers)
    assert httpx.get(url).content == body
    part = httpx.get(url, headers={"Range": "bytes=2-9"})
    assert part.status_code == 206 and part.content == body[2:10]
    assert part.headers["content-range"] == f"bytes 2-9/{len(body)}"
    assert httpx.get(f"{mini_url}/datasets/beta/qa-csv/resolve/{sha}/train.csv").content == body


def test_hf_hub_download_and_snapshot(mini_url, mini_root, tmp_path):
    path = hf_hub_download(
        "acme/multi-config", "math/train.jsonl", repo_type="dataset", endpoint=mini_url, cache_dir=tmp_path, token=False
    )
    assert open(path, "rb").read() == (mini_root / "acme/multi-config/math/train.jsonl").read_bytes()
    again = hf_hub_download(
        "acme/multi-config", "math/train.jsonl", repo_type="dataset", endpoint=mini_url, cache_dir=tmp_path, token=False
    )
    assert again == path
    folder = snapshot_download(
        "acme/multi-config", repo_type="dataset", endpoint=mini_url, cache_dir=tmp_path, token=False
    )
    assert (tmp_path / folder / "code/part-0.jsonl").exists()


def test_hf_file_system(mini_url):
    fs = HfFileSystem(endpoint=mini_url, token=False)
    assert sorted(fs.ls("datasets/acme/chat-parquet", detail=False)) == [
        "datasets/acme/chat-parquet/README.md",
        "datasets/acme/chat-parquet/data",
    ]
    with fs.open("datasets/beta/qa-csv/train.csv", "rb") as fh:
        assert fh.read().startswith(b'"question","answer"')
    assert fs.glob("datasets/acme/chat-parquet/data/*.parquet") == [
        "datasets/acme/chat-parquet/data/test_sft-00000.parquet",
        "datasets/acme/chat-parquet/data/train_sft-00000.parquet",
    ]


def test_typed_errors(api, mini_url, tmp_path):
    with pytest.raises(RepositoryNotFoundError) as missing_repo:
        api.dataset_info("acme/absent")
    assert not isinstance(missing_repo.value, GatedRepoError)
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info("acme/chat-parquet", revision="0" * 40)
    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(
            "acme/chat-parquet", "nope.txt", repo_type="dataset", endpoint=mini_url, cache_dir=tmp_path, token=False
        )
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(
            "acme/chat-parquet",
            "README.md",
            revision="deadbeef",
            repo_type="dataset",
            endpoint=mini_url,
            cache_dir=tmp_path,
            token=False,
        )
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(
            "acme/absent", "README.md", repo_type="dataset", endpoint=mini_url, cache_dir=tmp_path, token=False
        )


def test_gated_repo_needs_any_token(mini_url, tmp_path):
    raw = httpx.get(f"{mini_url}/datasets/gated-co/secret-logs/resolve/main/data/train.jsonl")
    assert raw.status_code == 401 and raw.headers["x-error-code"] == "GatedRepo"
    assert "restricted" in raw.json()["error"]
    with pytest.raises(GatedRepoError):
        hf_hub_download(
            "gated-co/secret-logs",
            "data/train.jsonl",
            repo_type="dataset",
            endpoint=mini_url,
            cache_dir=tmp_path,
            token=False,
        )
    path = hf_hub_download(
        "gated-co/secret-logs",
        "data/train.jsonl",
        repo_type="dataset",
        endpoint=mini_url,
        cache_dir=tmp_path,
        token="hf_anything",
    )
    assert open(path).read().count("\n") == 4


def test_malformed_files_still_download(mini_url, mini_root):
    got = httpx.get(f"{mini_url}/datasets/broken/malformed/resolve/main/data/train.jsonl")
    assert got.status_code == 200 and got.content == (mini_root / "broken/malformed/data/train.jsonl").read_bytes()


def test_bad_query_is_a_400(mini_url):
    assert httpx.get(f"{mini_url}/api/datasets", params={"sort": "nonsense"}).status_code == 400
    assert httpx.get(f"{mini_url}/api/datasets", params={"limit": "many"}).status_code == 400
    assert httpx.get(f"{mini_url}/api/datasets", params={"limit": "0"}).status_code == 400
    assert httpx.get(f"{mini_url}/api/datasets", params={"cursor": "-5"}).status_code == 400
    paths_info = f"{mini_url}/api/datasets/acme/chat-parquet/paths-info/main"
    assert httpx.post(paths_info, content=b"[1, 2]", headers={"content-type": "application/json"}).status_code == 400
    assert httpx.post(paths_info, content=b"{nope", headers={"content-type": "application/json"}).status_code == 400
    assert httpx.post(paths_info, json={"paths": ["README.md"]}).json()[0]["path"] == "README.md"


def test_odd_paths_are_typed_404s(mini_url):
    for path in ("caf%C3%A9.txt", "%2e%2e/%2e%2e/etc/passwd", "data%2F..%2F..%2F..%2Fminihub"):
        got = httpx.get(f"{mini_url}/datasets/acme/chat-parquet/resolve/main/{path}")
        assert got.status_code == 404 and got.headers["x-error-code"] == "EntryNotFound", path
    assert httpx.get(f"{mini_url}/datasets/acme/chat-parquet/resolve/main/a%0Ab.txt").status_code == 404
    assert httpx.get(f"{mini_url}/api/datasets/..%2F..%2Fetc/passwd").status_code == 404
