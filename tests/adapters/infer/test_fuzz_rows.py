"""Fuzz (hypothesis): random JSON rows and random bytes through detection, apply, the contract and ingest.
Nothing may raise, and every row is accounted for: in == rows written + rows dropped, one quarantine
entry per dropped row."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adapters.infer.detect import detect
from adapters.infer.infer import _spec_data
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow, iter_local_rows
from adapters.spec import AdapterSpec, SourceSpec
from catalog.errors import DraftsetError, ZeroOutput
from catalog.shards import iter_rows
from pipeline.ingest.run import IngestConfig, ingest_rows
from pipeline.stage import StageRun

KEYS = [
    "messages",
    "conversations",
    "role",
    "from",
    "content",
    "value",
    "text",
    "system",
    "prompt",
    "response",
    "instruction",
    "output",
    "tool_calls",
    "name",
    "arguments",
    "train",
    "mask",
    "chosen",
    "x",
]
ROLES = ["user", "assistant", "system", "human", "gpt", "tool", "[/red]", "\x1b[2J", ""]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**80), max_value=10**80),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(ROLES + ["\ud800", "[[[["]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=25,
)
turn = st.fixed_dictionaries({"role": st.sampled_from(ROLES), "content": json_values})
chatty = st.fixed_dictionaries({"messages": st.lists(turn, max_size=4)})
rows = st.lists(
    st.one_of(chatty, st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5)), min_size=1, max_size=12
)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SOURCE = SourceSpec(repo_id="fuzz/rows", revision="r" * 40, config="default", split="train", data_files=["train.jsonl"])
MESSAGES_SPEC = AdapterSpec.from_data(
    {
        "source": SOURCE.model_dump(),
        "layout": "messages",
        "messages_path": "messages",
        "role_key": "role",
        "content_key": "content",
        "role_map": {"user": "user", "assistant": "assistant", "system": "system"},
        "category": "general chat",
    }
)


@FUZZ
@given(rows)
def test_detection_inference_and_contract_never_raise(sample):
    d = detect(sample)
    if d.fields.get("layout") is None:
        return
    try:
        spec = AdapterSpec.from_data({**_spec_data(d, SOURCE, "regenerate", "general chat")}, where="fuzz")
    except DraftsetError:
        return  # a clear refusal of the inferred spec is an allowed outcome
    result = run_contract(spec, [RawRow(i, row) for i, row in enumerate(sample)])
    assert result.n_rows == len(sample) and result.n_malformed + result.n_rejected <= len(sample)


def _ingest(lines: list[bytes]) -> tuple[dict[str, int], int, set[int]]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "train.jsonl"
        data.write_bytes(b"\n".join(lines) + b"\n")
        out = Path(tmp) / "out"
        config = IngestConfig.for_spec(MESSAGES_SPEC)
        try:
            with StageRun("ingest", config, out) as run:
                ingest_rows(MESSAGES_SPEC, iter_local_rows([("train.jsonl", data)]), out, run)
        except ZeroOutput:
            pass
        quarantine = out / "quarantine.jsonl"
        n_quarantined = len(quarantine.read_text().splitlines()) if quarantine.exists() else 0
        written = {r["row_index"] for r in iter_rows([out], columns=["row_index"])}
        return dict(run.counts), n_quarantined, written


def _check_accounting(lines: list[bytes]) -> None:
    counts, n_quarantined, written = _ingest(lines)
    dropped = sum(v for k, v in counts.items() if k.startswith("dropped_"))
    # A UTF-8 byte-order mark opening the file is an encoding marker, not data (adapters/read/files.py strips it).
    first = lines[0].removeprefix(b"\xef\xbb\xbf")
    assert counts["in"] == sum(1 for line in [first, *lines[1:]] if line.strip())
    assert counts["in"] == len(written) + dropped, counts  # every row: written or dropped, never both/neither
    assert n_quarantined == dropped  # one quarantine line per dropped row


@FUZZ
@given(rows)
def test_ingest_accounts_for_every_random_json_row(sample):
    _check_accounting([json.dumps(row).encode("utf-8", "surrogatepass") for row in sample])


@FUZZ
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=60).filter(lambda b: b"\n" not in b),
            rows.map(lambda r: json.dumps(r[0]).encode("utf-8", "surrogatepass")),
            st.integers(1, 3000).map(lambda n: b'{"messages": ' + b"[" * n + b"]" * n + b"}"),
            st.integers(60, 6000).map(lambda n: b'{"n": ' + b"7" * n + b"}"),
        ),
        min_size=1,
        max_size=10,
    )
)
@example([b"\xef\xbb\xbf"])  # found by this test: a file holding only a byte-order mark has no rows
def test_ingest_accounts_for_every_line_of_random_bytes(lines):
    _check_accounting(lines)
