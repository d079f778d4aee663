"""Unit tests: repo folder → card tags, files, content-hash revision; the per-repo scan cache."""

from __future__ import annotations

import os

from pipeline.servers.localhub.repo import git_blob_oid
from pipeline.servers.localhub.store import HubStore, valid_repo_id
from pipeline.servers.localhub.write import write_repo


def _repo(root, repo_id="org/data", **card):
    card = {
        "license": "mit",
        "task_categories": ["text-generation"],
        "language": ["en", "de"],
        "tags": ["chat"],
        "x_downloads": 42,
        "x_likes": 3,
        **card,
    }
    return write_repo(root, repo_id, card, {"data/train.jsonl": [{"text": "hello"}]}, body="# Title\n\nSome words.")


def test_card_becomes_hub_tags_and_popularity(tmp_path):
    _repo(tmp_path)
    scan = HubStore(tmp_path).get("org/data")
    assert scan.tags == [
        "task_categories:text-generation",
        "language:en",
        "language:de",
        "license:mit",
        "chat",
        "format:json",
        "region:us",
    ]
    assert (scan.downloads, scan.likes, scan.gated, scan.author) == (42, 3, False, "org")
    assert scan.description == "# Title Some words."
    assert sorted(scan.files) == ["README.md", "data/train.jsonl"]
    data = (tmp_path / "org/data/data/train.jsonl").read_bytes()
    assert scan.files["data/train.jsonl"].oid == git_blob_oid(data)
    assert git_blob_oid(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob id


def test_gated_values(tmp_path):
    _repo(tmp_path, "org/auto", gated=True)
    _repo(tmp_path, "org/manual", gated="manual")
    store = HubStore(tmp_path)
    assert store.get("org/auto").gated == "auto"
    assert store.get("org/manual").gated == "manual"


def test_revision_is_stable_and_changes_with_content(tmp_path):
    _repo(tmp_path)
    first = HubStore(tmp_path).get("org/data").sha
    assert len(first) == 40 and int(first, 16) >= 0
    assert HubStore(tmp_path).get("org/data").sha == first  # fresh store, same bytes → same revision
    (tmp_path / "org/data/data/train.jsonl").write_text('{"text": "changed"}\n')
    assert HubStore(tmp_path).get("org/data").sha != first
    # A copy elsewhere with the old bytes differs; given the same edit it matches: the revision hashes
    # content, never the folder's path or mtimes.
    _repo(tmp_path / "copy")
    assert HubStore(tmp_path / "copy").get("org/data").sha != HubStore(tmp_path).get("org/data").sha
    (tmp_path / "copy/org/data/data/train.jsonl").write_text('{"text": "changed"}\n')
    assert HubStore(tmp_path / "copy").get("org/data").sha == HubStore(tmp_path).get("org/data").sha


def test_scan_cache_reuses_until_the_folder_changes(tmp_path):
    _repo(tmp_path)
    store = HubStore(tmp_path)
    a = store.get("org/data")
    assert store.get("org/data") is a
    (tmp_path / "org/data/data/extra.jsonl").write_text('{"text": "x"}\n')
    b = store.get("org/data")
    assert b is not a and "data/extra.jsonl" in b.files and b.sha != a.sha
    naive = HubStore(tmp_path, cache=False)
    assert naive.get("org/data") is not naive.get("org/data")


def test_hidden_files_and_symlinks_are_not_served(tmp_path):
    _repo(tmp_path)
    (tmp_path / "org/data/.git").mkdir()
    (tmp_path / "org/data/.git/config").write_text("secret")
    (tmp_path / "outside.txt").write_text("outside the repo")
    os.symlink(tmp_path / "outside.txt", tmp_path / "org/data/link.txt")
    assert sorted(HubStore(tmp_path).get("org/data").files) == ["README.md", "data/train.jsonl"]


def test_broken_card_keeps_repo_listed(tmp_path):
    _repo(tmp_path)
    (tmp_path / "org/data/README.md").write_text("---\nlicense: [unclosed\n---\nbody\n")
    scan = HubStore(tmp_path).get("org/data")
    assert scan.card_data == {} and scan.card_error and scan.tags == ["format:json", "region:us"]


def test_repo_ids_and_traversal(tmp_path):
    _repo(tmp_path, "a/one")
    _repo(tmp_path, "b/two")
    (tmp_path / ".hidden").mkdir()
    store = HubStore(tmp_path)
    assert store.repo_ids() == ["a/one", "b/two"]
    assert [s.repo_id for s in store.all()] == ["a/one", "b/two"]
    for bad in ("../a", "a/..", "a", "a/b/c", "a/.x", ".."):
        assert not valid_repo_id(bad)
        assert store.get(bad) is None
    assert store.get("a/missing") is None


def test_listing_is_reused_for_ttl_seconds_but_single_repos_are_always_current(tmp_path):
    _repo(tmp_path, "a/one")
    store = HubStore(tmp_path, listing_ttl=3600)
    assert [s.repo_id for s in store.all()] == ["a/one"]
    _repo(tmp_path, "b/two")
    assert [s.repo_id for s in store.all()] == ["a/one"]  # within the TTL: the previous listing
    assert store.get("b/two") is not None  # direct lookups never wait for the TTL
    fresh = HubStore(tmp_path, listing_ttl=0)
    assert [s.repo_id for s in fresh.all()] == ["a/one", "b/two"]
