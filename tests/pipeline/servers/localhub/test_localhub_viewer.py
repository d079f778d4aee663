"""Viewer-style endpoints (/viewer/...) on the mini hub: shapes, multi-config, errors for bad data."""

from __future__ import annotations

import httpx
import pytest


@pytest.fixture()
def viewer(mini_url):
    def get(endpoint: str, headers: dict | None = None, **params) -> httpx.Response:
        return httpx.get(f"{mini_url}/viewer/{endpoint}", params=params, headers=headers or {})

    return get


def test_splits_follow_card_configs(viewer):
    body = viewer("splits", dataset="acme/multi-config").json()
    assert body == {
        "splits": [
            {"dataset": "acme/multi-config", "config": "code", "split": "train"},
            {"dataset": "acme/multi-config", "config": "math", "split": "train"},
        ],
        "pending": [],
        "failed": [],
    }
    odd = viewer("splits", dataset="acme/chat-parquet").json()["splits"]
    assert [s["split"] for s in odd] == ["train_sft", "test_sft"]
    inferred = viewer("splits", dataset="beta/qa-csv").json()["splits"]
    assert inferred == [{"dataset": "beta/qa-csv", "config": "default", "split": "train"}]


def test_first_rows_shape(viewer):
    body = viewer("first-rows", dataset="acme/chat-parquet", config="default", split="test_sft").json()
    assert (body["dataset"], body["config"], body["split"], body["truncated"]) == (
        "acme/chat-parquet",
        "default",
        "test_sft",
        False,
    )
    assert body["features"] == [
        {
            "feature_idx": 0,
            "name": "messages",
            "type": {
                "feature": {
                    "role": {"dtype": "string", "_type": "Value"},
                    "content": {"dtype": "string", "_type": "Value"},
                },
                "_type": "List",
            },
        }
    ]
    assert [r["row_idx"] for r in body["rows"]] == list(range(10))
    assert body["rows"][0]["row"] == {
        "messages": [{"role": "user", "content": "question 20"}, {"role": "assistant", "content": "answer 20"}]
    }
    array = viewer("first-rows", dataset="beta/sharegpt-array", config="default", split="train").json()
    assert len(array["rows"]) == 8 and array["rows"][0]["row"]["conversations"][0]["from"] == "human"


def test_info_and_size_count_rows(viewer):
    info = viewer("info", dataset="acme/multi-config").json()
    assert set(info["dataset_info"]) == {"code", "math"}
    assert info["dataset_info"]["code"]["splits"]["train"]["num_examples"] == 5
    assert info["dataset_info"]["code"]["builder_name"] == "json"
    one = viewer("info", dataset="acme/multi-config", config="math").json()
    assert one["dataset_info"]["config_name"] == "math" and one["partial"] is False
    size = viewer("size", dataset="acme/chat-parquet").json()
    assert size["size"]["dataset"]["num_rows"] == 30
    assert [(s["split"], s["num_rows"]) for s in size["size"]["splits"]] == [("train_sft", 20), ("test_sft", 10)]
    assert size["failed"] == [] and size["partial"] is False


def test_is_valid(viewer):
    assert viewer("is-valid", dataset="acme/chat-parquet").json()["viewer"] is True
    broken = viewer("is-valid", dataset="broken/malformed").json()
    assert broken["viewer"] is False and broken["preview"] is False


def test_malformed_data_is_an_error_json_not_a_crash(viewer):
    rows = viewer("first-rows", dataset="broken/malformed", config="default", split="train")
    assert rows.status_code == 500 and rows.headers["x-error-code"] == "DatasetGenerationError"
    assert "train.jsonl" in rows.json()["error"]
    size = viewer("size", dataset="broken/malformed").json()
    assert size["partial"] is True and size["failed"][0]["split"] == "train"
    assert viewer("splits", dataset="acme/chat-parquet").status_code == 200  # server still fine


def test_not_found_and_missing_params(viewer):
    missing = viewer("splits", dataset="nobody/nothing")
    assert missing.status_code == 404 and missing.headers["x-error-code"] == "ResponseNotFound"
    assert viewer("splits").status_code == 422
    assert viewer("first-rows", dataset="acme/chat-parquet").status_code == 422
    assert viewer("first-rows", dataset="acme/chat-parquet", config="default", split="nope").status_code == 404


def test_gated_rows_need_a_token(viewer):
    params = {"dataset": "gated-co/secret-logs", "config": "default", "split": "train"}
    assert viewer("first-rows", **params).status_code == 401
    ok = viewer("first-rows", headers={"Authorization": "Bearer x"}, **params)
    assert ok.status_code == 200 and len(ok.json()["rows"]) == 4
