"""One detector: find's scoring stores what it detected, proposal starts from it; structural inference units."""

from __future__ import annotations

from huggingface_hub import HfApi

from adapters.infer.detect import TARGET_FAMILIES, Detected, detect
from adapters.infer.infer import propose_adapter
from agents.configuration import FindConfig
from agents.scoring import score_candidate
from catalog import Catalog

NESTED = [
    {
        "episode": {
            "turns": [
                {"actor": "client", "payload": {"text": f"How do I fix bug {i} in the parser?"}},
                {
                    "actor": "helper",
                    "payload": {
                        "text": f"Start by reproducing it, then bisect:\n$ pytest -x -k parser_{i}\n$ git bisect start"
                    },
                },
            ]
        }
    }
    for i in range(8)
]


def test_find_scores_with_the_same_detector_and_keeps_what_it_detected():
    hit = {
        "repo_id": "o/agent-chats",
        "sha": "a" * 40,
        "downloads": 10,
        "likes": 1,
        "gated": False,
        "tags": ["license:mit"],
        "card_data": {"license": "mit"},
    }
    facts = {
        "card_text": "agent conversations about fixing code",
        "card_error": None,
        "access": "ok",
        "configs": [
            {"config": "default", "split": "train", "num_rows": 8, "num_bytes": 100, "features": {}, "rows": NESTED}
        ],
    }
    cand = score_candidate("agentic", "agentic coding", hit, facts, FindConfig())
    assert cand.status == "relevant" and cand.est_yield == 1.0  # the old table-driven detector found nothing here
    stored = Detected.from_json(cand.schemas[0]["detected"])
    assert stored.fields == detect(NESTED).fields
    assert stored.fields["messages_path"] == "episode.turns" and stored.fields["content_key"] == "payload.text"
    assert stored.fields["role_map"] == {"client": "user", "helper": "assistant"}
    assert "alternates with the user side" in stored.reasons["role_map.helper"]  # unknown label, by structure
    assert FindConfig().target_families == TARGET_FAMILIES  # one list of target families


def test_proposal_starts_from_finds_stored_detection(hub_url, home):
    repo = "sharegpt-lab/sharegpt-vicuna-mini"
    sha = HfApi(endpoint=hub_url).dataset_info(repo).sha
    cat = Catalog(home)
    cat.migrate()
    rows = [
        {
            "conversations": [
                {"from": "human", "value": "What is a hash map used for?"},
                {"from": "gpt", "value": "It stores values under keys for fast lookup."},
            ]
        }
    ]
    detected = detect(rows).to_json()
    detected["reasons"]["role_key"] = "stored by find"
    cat.upsert(
        "schemas",
        [
            {
                "repo_id": repo,
                "revision": sha,
                "config": "default",
                "split": "train",
                "features": {},
                "sample_rows": rows,
                "detected": detected,
            }
        ],
    )
    proposal = propose_adapter(repo, endpoint=hub_url, viewer_base=hub_url + "/viewer", catalog=cat)
    assert proposal.reasons["sample"].startswith("detected by find")
    assert proposal.reasons["role_key"] == "stored by find"
    # find saw two labels; a `system` turn occurs only in later rows: the sample completes the vocabulary
    assert proposal.spec.role_map == {"human": "user", "gpt": "assistant", "system": "system"}


def test_unknown_label_stays_unmapped_when_structure_cannot_decide():
    rows = [
        {
            "messages": [
                {"role": "user", "content": "Please review this function for bugs."},
                {"role": "narrator", "content": "The user waits while the reviewer reads."},
                {"role": "assistant", "content": "The loop skips the last element; use range(n)."},
            ]
        }
    ] * 5
    d = detect(rows)
    assert "narrator" not in d.fields["role_map"] and "role_map.narrator" in d.needs_review


def test_alternative_answers_are_not_read_as_a_dialogue():
    """Several models' answers to one prompt (objects without a speaker) read alike: no roles are inferred."""
    answer = "Use sorted(d.items(), key=lambda kv: kv[1]); sorted is stable so ties keep insertion order."
    rows = [
        {
            "instruction": f"How do I sort a dict by value? ({i})",
            "completions": [
                {"note": "first model's answer, verbatim", "text": answer + " one"},
                {"note": "second model's answer, verbatim", "text": answer + " two"},
            ],
        }
        for i in range(8)
    ]
    d = detect(rows)
    assert d.fields.get("layout") != "utterances" and "pair_keys" not in d.fields
