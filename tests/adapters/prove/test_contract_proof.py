"""The contract proves what a mapping did: every raw field accounted for (traced, not guessed), implausible
structure caught by name, a few bad rows quarantined instead of refusing the dataset, and corruptions of
passing schema families killed (a fast subset of `python -m eval.bench.mutation_kill`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.infer.accounting import account, proposed_drops
from adapters.map.markup import find_markup
from adapters.prove.contract import Check, ContractResult, run_contract
from adapters.read.source import RawRow, iter_local_rows
from adapters.spec import AdapterSpec
from catalog.shards import iter_rows
from eval.bench.mutation_kill import CONTROLS, CORRUPTIONS, report, run
from eval.bench.schema_scoreboard import DEFAULT_CORPUS
from pipeline.ingest.run import IngestConfig, ingest_rows
from pipeline.stage import StageRun
from tests.kits.adapters import make_spec

TOPICS = ["binary search", "rate limiting", "Docker layers", "unit tests", "HTTP caching", "regular expressions"]


def raw(rows: list[dict]) -> list[RawRow]:
    return [RawRow(i, r, None) for i, r in enumerate(rows)]


def _columns(**fields: Any) -> AdapterSpec:
    return make_spec(layout="columns", columns={"prompt": ["question"], "response": "answer"}, **fields)


def _qa(i: int) -> dict:
    topic = TOPICS[i % len(TOPICS)]
    return {
        "question": f"How does {topic} work in a service with {i} users?",
        "answer": f"{topic} works by trading a little memory for time; in case {i} measure first, then change one "
        "thing at a time so the cause stays visible.",
    }


def _check(result: ContractResult, name: str) -> Check:
    return next(c for c in result.checks if c.name == name)


def test_an_unread_instruction_column_fails_naming_the_field_and_a_drop_decision_passes() -> None:
    rows = [
        {**_qa(i), "definition": f"Answer as a senior engineer reviewing change {i}, citing the relevant docs."}
        for i in range(20)
    ]
    result = run_contract(_columns(), raw(rows))
    fields = _check(result, "fields")
    assert not result.passed and not fields.passed
    assert "field 'definition'" in fields.detail and "Answer as a senior engineer" in fields.detail
    table = {f.path: f for f in result.fields}
    assert table["definition"].status == "unaccounted" and table["definition"].rows == 20
    assert table["question"].where == ["user text"] and table["answer"].where == ["assistant text (regenerated)"]
    assert result.fields[0].path == "answer"  # biggest text first: the review reads the table top-down

    decided = run_contract(_columns(drop={"definition": "house style note, not part of the request"}), raw(rows))
    assert decided.passed and {f.path: f.status for f in decided.fields}["definition"] == "dropped"


def test_proposal_drops_metadata_by_name_but_never_substantial_text() -> None:
    rows = [
        {
            **_qa(i),
            "id": f"{i:08x}deadbeef",
            "url": f"https://example.org/q/{i}",
            "created_at": "2024-05-01T10:00:00Z",
            "score": 0.5 + i / 100,
            "notes": f"Reviewer {i} thinks the answer should mention the failure modes and the cost model too.",
        }
        for i in range(20)
    ]
    drops = proposed_drops(_columns(), list(enumerate(rows)))
    assert drops == {"created_at": "timestamps", "id": "ids", "score": "scores", "url": "urls"}
    result = run_contract(_columns(drop=drops), raw(rows))
    assert not result.passed and "field 'notes'" in _check(result, "fields").detail


def test_trace_names_role_labels_flags_and_tool_calls_and_finds_rendered_duplicates() -> None:
    turns = [
        {"role": "user", "content": "List the files in the tests folder please.", "mask": False},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": {"path": "tests"}}}],
            "mask": True,
        },
        {"role": "tool", "content": "test_a.py test_b.py", "tool_call_id": "c1", "mask": False},
        {"role": "assistant", "content": "There are two test files: test_a.py and test_b.py.", "mask": True},
    ]
    rendered = "\n".join(f"<|im_start|>{t['role']}\n{t['content']}<|im_end|>" for t in turns if t["content"])
    spec = make_spec(
        mode="native",
        role_map={"user": "user", "assistant": "assistant", "tool": "tool"},
        tool_calls_key="tool_calls",
        tool_call_id_key="tool_call_id",
        train_flag_key="mask",
    )
    where = {
        r.path: (r.status, r.where)
        for r in account(spec, [(i, {"messages": turns, "text": rendered}) for i in range(5)])
    }
    assert where["messages[].role"] == ("carried", ["role label"])
    assert where["messages[].mask"] == ("carried", ["training flag"])
    assert where["messages[].tool_calls[].function.arguments.path"] == ("carried", ["tool call"])
    assert where["messages[].tool_call_id"][0] == "carried"
    assert where["text"][0] == "duplicate"  # a rendered copy of the turns: nothing lost, nothing to decide


def test_a_second_speaker_mapped_to_system_fails_system_position() -> None:
    rows = [
        {
            "messages": [
                {"role": "client", "content": f"My order {i} has not arrived."},
                {"role": "desk", "content": "Sorry, checking now."},
                {"role": "client", "content": "Thanks, it was due on Monday."},
            ]
        }
        for i in range(20)
    ]
    spec = make_spec(role_map={"client": "user", "desk": "system"})
    check = _check(run_contract(spec, raw(rows)), "system_position")
    assert not check.passed and check.count == 20 and "'desk'" in check.detail and check.severity == "fail"


def test_markup_left_in_answers_fails_and_the_list_lives_in_one_place() -> None:
    rows = [
        {
            "messages": [
                {"role": "user", "content": q["question"]},
                {"role": "assistant", "content": f"<answer>{q['answer']}</answer>"},
            ]
        }
        for q in map(_qa, range(20))
    ]
    check = _check(run_contract(make_spec(mode="native"), raw(rows)), "markup")
    assert not check.passed and "<answer>" in check.detail
    assert [m.name for m, _ in find_markup("[INST] hi [/INST]", "user")] == ["llama2_inst"]
    assert find_markup("Put the result inside <answer> tags.", "user") == []  # asking for tags is not markup


def test_two_bad_rows_in_300_are_quarantined_not_refused_and_ingest_quarantines_them(tmp_path: Path) -> None:
    def row(i: int) -> dict:
        call = {"id": f"c{i}", "function": {"name": "ls", "arguments": {"path": "."}}}
        turns = [
            {"role": "user", "content": f"What is in folder {i}?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "a.py", "tool_call_id": f"c{i}"},
            {"role": "assistant", "content": f"Folder {i} holds a.py."},
        ]
        if i in (7, 150):  # the tool turn answers no call (glaive_toolcall_zh_demo has two such rows in 300)
            turns[1] = {"role": "assistant", "content": "Let me look."}
        return {"messages": turns}

    spec = make_spec(
        mode="native",
        role_map={"user": "user", "assistant": "assistant", "tool": "tool"},
        tool_calls_key="tool_calls",
        tool_call_id_key="tool_call_id",
    )
    rows = [row(i) for i in range(300)]
    result = run_contract(spec, raw(rows))
    links = _check(result, "tool_links")
    assert result.passed and links.passed and links.quarantined and links.severity == "warn"
    assert result.n_flagged == 2 and result.flagged == {"tool_links": 2}
    assert {q["row_index"] for q in result.quarantined if q["field"] == "<record>"} == {7, 150}
    assert any(p["cause"] == "tool_links" and p["count"] == 2 for p in result.problems)

    worse = [row(i) if i % 25 else {"messages": row(i)["messages"][:1] + row(i)["messages"][2:]} for i in range(300)]
    assert not run_contract(spec, raw(worse)).passed  # 12/300 = 4% > 1%
    assert run_contract(spec.model_copy(update={"max_bad_fraction": 0.05}), raw(worse)).passed

    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    with StageRun("ingest", IngestConfig.for_spec(spec), out) as run_:
        ingest_rows(spec, iter_local_rows([("train.jsonl", data)]), out, run_)
    assert run_.counts["dropped_check_tool_links"] == 2
    written = {r["row_index"] for r in iter_rows([out], columns=["row_index"])}
    assert len(written) == 298 and not {7, 150} & written


def test_swapped_columns_and_label_prompts_fail_by_name() -> None:
    swapped = [{"question": q["answer"], "answer": q["question"]} for q in map(_qa, range(20))]
    check = _check(run_contract(_columns(mode="native"), raw(swapped)), "answer_shorter")
    assert not check.passed and check.level == "error" and "swapped" in check.detail
    labels = [{"question": ["coding", "math"][i % 2], "answer": _qa(i)["answer"]} for i in range(20)]
    assert not _check(run_contract(_columns(mode="native"), raw(labels)), "prompt_label_like").passed
    copied = [{"question": q["answer"], "answer": q["answer"]} for q in map(_qa, range(20))]
    assert not _check(run_contract(_columns(mode="native"), raw(copied)), "duplicate_turns").passed


def test_mutations_of_passing_families_are_killed_and_controls_pass() -> None:
    from eval.bench.mutation_text import PARTIAL

    whole_rows = [m for m in [*CORRUPTIONS, *CONTROLS] if m not in PARTIAL]
    only = ["alpaca", "sharegpt-vicuna", "kimi-native-tools", "trl-prompt-completion"]
    results = run(DEFAULT_CORPUS, only=only, mutations=whole_rows)
    summary = report(results, verbose=False)
    assert {r.mutation for r in results} == set(whole_rows)
    assert summary["killed"] >= 15 and summary["survived"] == 0, summary["survivors"]
    assert summary["false_alarms"] == 0
    # Corruptions of a third of the rows: killed wherever they reach what is trained in 2+ sampled rows
    # (sharegpt-vicuna's single-turn rows keep only one mutated answer as context: a known survivor).
    partial = report(run(DEFAULT_CORPUS, only=["alpaca", "kimi-native-tools"], mutations=sorted(PARTIAL)), False)
    assert partial["killed"] >= 4 and partial["survived"] == 0, partial["survivors"]


def test_a_re_proposal_keeps_a_persons_drop_decisions_and_tolerance() -> None:
    from adapters.review.review import keep_decisions

    old = _columns(drop={"notes": "reviewer notes, not part of the task"}, max_bad_fraction=0.03)
    new = keep_decisions(old, _columns(drop={"id": "ids"}))
    assert new.drop == {"id": "ids", "notes": "reviewer notes, not part of the task"} and new.max_bad_fraction == 0.03
