"""Attachment records ({file_name, url, mime_type}) beside the turns are media (issue 33, 5d): refused by the
media verdict for a text-only target, or kept as parts `{type, ref}`, never dropped as metadata."""

from __future__ import annotations

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.map.apply import RowMapper
from adapters.read.media import kind_of, parts_of
from adapters.spec import MediaSpec, SourceSpec


def _rows(n: int = 8) -> list[dict]:
    return [
        {
            "messages": [
                {"role": "user", "content": f"What is wrong in the attached screenshot of build {i}?"},
                {"role": "assistant", "content": f"Step {i} fails because the cache key changed; rebuild it."},
            ],
            "attachments": [
                {"file_name": f"b{i}.png", "url": f"https://f.example.org/{i:05x}", "mime_type": "image/png"}
            ],
        }
        for i in range(n)
    ]


def test_attachment_records_are_media_by_mime_or_file_name() -> None:
    assert kind_of({"file_name": "a.bin", "url": "https://x/1", "mime_type": "audio/wav"}) == "audio"
    assert kind_of({"name": "shot.jpeg", "url": "https://x/2"}) == "image"
    assert kind_of({"file_name": "spec.pdf", "url": "https://x/3"}) == "file"
    assert kind_of({"title": "A paper", "year": 2020}) is None
    assert kind_of({"name": "notes.pdf"}) is None  # a title alone, no address or type: not an attachment
    parts = parts_of([{"file_name": "b.png", "url": "https://f/1", "mime_type": "image/png"}], "attachments")
    assert parts == [{"type": "image", "ref": "https://f/1"}]


def test_attachments_refuse_by_the_media_verdict_or_keep_as_parts() -> None:
    rows = _rows()
    d = detect(rows)
    assert d.fields["media"]["fields"] == ["attachments"]
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["t.jsonl"])
    spec = build_proposal(d, list(enumerate(rows)), source, "").spec
    assert spec.media is not None and spec.media.policy == "refuse"
    keep = spec.model_copy(update={"media": MediaSpec(fields=["attachments"], policy="keep"), "mode": "native"})
    rec = RowMapper(keep).apply(0, rows[0])[0]
    assert [p.model_dump() for m in rec.messages for p in (m.parts or [])] == [
        {"type": "image", "ref": "https://f.example.org/00000"}
    ]


def test_a_mime_column_beside_an_opaque_url_names_the_attachment() -> None:
    rows = [
        {
            "messages": r["messages"],
            "file_url": f"https://f.example.org/{i:05x}",
            "file_mime": "image/png",
            "file_name": f"shot-{i}",
        }
        for i, r in enumerate(_rows())
    ]
    d = detect(rows)
    assert d.fields["media"]["fields"] == ["file_url", "file_name", "file_mime"]
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["t.jsonl"])
    from adapters.infer.infer import AdapterRefused

    try:
        spec = build_proposal(d, list(enumerate(rows)), source, "").spec
    except AdapterRefused as exc:  # refused by the media verdict: named, not dropped
        assert exc.verdict == "media"
    else:
        assert spec.media is not None and spec.media.policy == "refuse"


def test_an_opaque_url_typed_by_its_mime_column_is_refused_or_kept_as_a_part() -> None:
    from adapters.prove.contract import run_contract
    from adapters.read.source import RawRow

    rows = [
        {"messages": r["messages"], "file_url": f"https://f.example.org/{i:05x}", "file_mime": "image/png"}
        for i, r in enumerate(_rows())
    ]
    source = SourceSpec(repo_id="o/d", revision="0" * 40, config="default", split="train", data_files=["t.jsonl"])
    spec = build_proposal(detect(rows), list(enumerate(rows)), source, "").spec
    result = run_contract(spec, [RawRow(row_index=i, row=x, error=None) for i, x in enumerate(rows)])
    assert result.verdict == "refused: media"
    keep = spec.model_copy(
        update={"media": MediaSpec(fields=["file_url", "file_mime"], policy="keep"), "mode": "native"}
    )
    rec = RowMapper(keep).apply(0, rows[0])[0]
    assert [p.model_dump() for m in rec.messages for p in (m.parts or [])] == [
        {"type": "image", "ref": "https://f.example.org/00000"}
    ]
