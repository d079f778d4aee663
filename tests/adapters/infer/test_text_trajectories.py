"""Agent trajectories written as text (#33): the agent writes its command in its own message (a fence or a tag)
and the environment answers as its own speaker. Read as tool results, every row was rejected ("tool result with
no earlier tool call"); inference now tries the other reading, keeps the environment's output as the observation
turn the agent reads next (a user turn), and says so in the proposal. A tool-calling set whose calls were deleted
is not reread: the turns before its results write no command."""

from __future__ import annotations

import random
import zlib

import pytest

from adapters.infer.detect import detect
from adapters.infer.infer import build_proposal
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.spec import SourceSpec
from eval.bench.schema_scoreboard import DEFAULT_CORPUS, score_family
from tests.fixtures.schemas import text_agents

SOURCE = SourceSpec(repo_id="t/t", revision="0" * 40, config="default", split="train", data_files=["x.parquet"])
TEXT_FAMILIES = [
    "text-agent-env-fenced",
    "text-agent-observation-tags",
    "text-agent-execute-bash",
    "text-agent-tool-speaker",
    "text-agent-ipython-python",
    "text-agent-bash-tag-sharegpt",
    "text-agent-terminal-speaker",
]


@pytest.mark.parametrize("family", TEXT_FAMILIES)
def test_text_written_trajectories_map_right_with_the_environment_as_observation(family: str) -> None:
    outcome = score_family(DEFAULT_CORPUS / family)
    assert outcome.outcome == "right", outcome.detail


def _episodes(write_command: bool) -> list[dict]:
    rng = random.Random(7)
    rows = []
    for i in range(16):
        turns = [{"role": "user", "content": f"Fix the failing parser test in case {i}; it drops the last row."}]
        for k in range(3):
            text = f"I will look at step {k} of the parser for case {i} first."
            if write_command:
                text += f"\n<command>\nsed -n {10 * k},{10 * k + 20}p src/io.py\n</command>"
            turns += [
                {"role": "assistant", "content": text},
                {"role": "environment", "content": f"line {rng.randint(1, 99)}: return rows  # case {i}"},
            ]
        turns.append({"role": "assistant", "content": "The loop skipped the last row; fixed and tested."})
        rows.append({"messages": turns})
    return rows


def test_the_proposal_records_which_reading_it_chose_and_why() -> None:
    rows = _episodes(write_command=True)
    d = detect(rows)
    assert d.fields["role_map"]["environment"] == "user"
    why = d.reasons["reading"]
    assert "rejects 16/16" in why and "tool result with no earlier tool call" in why and "maps 16/16" in why
    assert "fence or a tag" in why and "reading" in d.needs_review
    proposal = build_proposal(d, list(enumerate(rows)), SOURCE, "")
    assert proposal.spec.reasons["reading"] == why  # what `draftset adapters show` prints in its reasons table
    result = run_contract(proposal.spec, [RawRow(i, r, None) for i, r in enumerate(rows)])
    assert result.passed, result.summary()


def test_results_without_a_written_command_are_not_reread() -> None:
    rows = _episodes(write_command=False)  # nothing in the agent's text says it ran anything
    d = detect(rows)
    assert d.fields["role_map"]["environment"] == "tool"
    assert "kept, rejected by name" in d.reasons["reading"] and "only 0/48" in d.reasons["reading"]
    proposal = build_proposal(d, list(enumerate(rows)), SOURCE, "")
    result = run_contract(proposal.spec, [RawRow(i, r, None) for i, r in enumerate(rows)])
    assert not result.passed  # every row still rejected by name: loud, never silently relabelled


def test_a_tool_calling_set_with_some_calls_kept_is_not_reread() -> None:
    rows = _episodes(write_command=True)
    rows[0]["messages"][1]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    ]
    d = detect(rows)
    assert "reading" not in d.reasons or d.fields["role_map"].get("environment") != "user"


def test_every_text_family_builder_is_in_the_corpus() -> None:
    for build in text_agents.FAMILIES:
        fam = build(random.Random(zlib.crc32(build.__name__.encode())))
        assert (DEFAULT_CORPUS / fam.name / "family.json").exists(), fam.name


def _relabel(rows: list[dict], speaker: str) -> list[dict]:
    return [
        {"messages": [{**t, "role": speaker if t["role"] == "environment" else t["role"]} for t in r["messages"]]}
        for r in rows
    ]


def test_an_unknown_speaker_answering_written_commands_is_the_observation() -> None:
    d = detect(_relabel(_episodes(write_command=True), "sandbox"))
    assert d.fields["role_map"]["sandbox"] == "user" and "role_map.sandbox" in d.needs_review
    assert "48/48 of its turns follow an assistant turn that writes a command" in d.reasons["role_map.sandbox"]


def test_an_unknown_speaker_without_written_commands_stays_unmapped() -> None:
    d = detect(_relabel(_episodes(write_command=False), "sandbox"))
    assert "sandbox" not in d.fields["role_map"] and "left unmapped" in d.reasons["role_map.sandbox"]


def test_mutations_of_text_trajectories_are_killed_and_their_controls_pass() -> None:
    from eval.bench.mutation_kill import report, run

    results = run(DEFAULT_CORPUS, only=["text-agent-env-fenced", "text-agent-terminal-speaker"])
    summary = report(results, verbose=False)
    assert summary["survived"] == 0 and summary["false_alarms"] == 0, summary["survivors"]
    cut = {r.family: r.outcome for r in results if r.mutation == "drop_written_command"}
    assert cut == {"text-agent-env-fenced": "killed", "text-agent-terminal-speaker": "killed"}
    assert {r.outcome for r in results if r.mutation == "unmutated"} == {"equivalent"}
    assert summary["counts"]["refused-wrongly"] == 0 and summary["counts"]["silently-wrong"] == 0
