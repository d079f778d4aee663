"""A conversation stored as a struct of arrays keeps its speaker list as the roles (issue 33, 5b): before, the
text list was read alone and the speaker list dropped as metadata, so an agent-first dialogue came out inverted."""

from __future__ import annotations

from adapters.infer.detect import detect
from adapters.map.structure import zipped

GREETING = "Hello, I look after this repository's CI. Which job failed?"


def _rows(n: int = 10) -> list[dict]:
    rows = []
    for i in range(n):
        speakers = ["agent", "customer", "agent"]
        texts = [
            GREETING,
            f"The lint job {i} fails on a clean checkout.",
            f"Pin ruff to the version in job {i}'s lock file.",
        ]
        rows.append({"id": i, "dialogue": {"speaker": speakers, "utterance": texts}})
    return rows


def test_struct_of_arrays_zips_into_turn_objects() -> None:
    value = {"speaker": ["agent", "customer"], "utterance": ["Hi, what broke?", "The build."]}
    assert zipped(value) == [
        {"speaker": "agent", "utterance": "Hi, what broke?"},
        {"speaker": "customer", "utterance": "The build."},
    ]


def test_unrelated_or_ragged_arrays_are_not_zipped() -> None:
    ragged = {"speaker": ["a", "b"], "utterance": ["x"]}
    numbers = {"ids": [1, 2], "scores": [0.1, 0.2]}
    assert zipped(ragged) is ragged
    assert zipped(numbers) is numbers


def test_detect_reads_the_speaker_list_as_roles() -> None:
    d = detect(_rows())
    assert d.layout == "messages"
    assert d.fields["messages_path"] == "dialogue"
    assert d.fields["role_key"] == "speaker"
    assert d.fields["role_map"] == {"agent": "assistant", "customer": "user"}


def _record(turns: list[tuple[str, str]], mode: str = "native"):
    from adapters.records import Conversation

    return Conversation.model_validate(
        {
            "id": "x",
            "source": {"repo_id": "o/d", "revision": "r", "config": "default", "split": "train", "row_index": 0},
            "category": "coding",
            "mode": mode,
            "messages": [{"role": r, "content": c} for r, c in turns],
        }
    )


def test_an_asking_opener_may_be_the_assistant_but_a_stating_one_may_not() -> None:
    from adapters.prove.plausibility import record_problems

    greeting = [("assistant", GREETING), ("user", "Lint fails."), ("assistant", "Pin ruff.")]
    lost_user = [
        ("assistant", "Pin ruff to the locked version."),
        ("user", "Thanks, and tests?"),
        ("assistant", "Run pytest."),
    ]
    inverted = [("assistant", GREETING), ("user", "Pin ruff."), ("assistant", "Lint fails."), ("user", "Pin it.")]
    names = lambda rec: {name for name, _ in record_problems(rec)[0]}  # noqa: E731
    assert "role_sequence" not in names(_record(greeting))
    assert "role_sequence" in names(_record(lost_user))
    assert "role_sequence" in names(_record(inverted))  # native record ending on a 'user' turn: no last word


def test_top_level_speaker_and_text_columns_are_zipped_and_read_right() -> None:
    from adapters.infer.infer import build_proposal
    from adapters.map.apply import RowMapper
    from adapters.spec import SourceSpec

    rows = [{"speaker": r["dialogue"]["speaker"], "text": r["dialogue"]["utterance"], "id": r["id"]} for r in _rows()]
    d = detect(rows)
    assert d.layout == "messages"
    assert d.fields["zip_paths"] == ["speaker", "text"]
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["chats.jsonl"])
    spec = build_proposal(d, list(enumerate(rows)), source, "").spec
    assert spec.zip_paths == ["speaker", "text"]
    rec = RowMapper(spec).apply(0, rows[0])[0]
    assert [m.role for m in rec.messages][:2] == ["assistant", "user"]
    assert rec.messages[0].content == GREETING


def test_other_arrays_beside_the_speaker_and_text_columns_are_not_zipped() -> None:
    rows = [
        {
            "speaker": r["dialogue"]["speaker"],
            "text": r["dialogue"]["utterance"],
            "sent_at": [f"2024-05-0{k + 1}T10:00:00Z" for k in range(3)],
            "tags": ["ci", "lint"],
        }
        for r in _rows()
    ]
    d = detect(rows)
    assert d.fields["zip_paths"] == ["speaker", "text"]
