"""Untrusted text never becomes a command: every suggested command that embeds a value from a dataset (role
labels, repo ids, run ids) is pasted into a real shell, with `draftset` on PATH replaced by a recorder, in a
temp dir. Nothing but the recorder may run, and the words it receives are the values themselves (a label a
terminal would mangle comes back exactly through `adapters map`'s JSON-string form)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import httpx
import pytest
from huggingface_hub import errors as hub_errors

from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.review import gate, review, store
from agents.recording import review_queries
from catalog import Catalog
from catalog.errors import DraftsetError
from catalog.hub.errors import translate
from catalog.untrusted import (
    command,
    label_from_word,
    label_word,
    shell_word,
    split_assignment,
    sql_command,
    suggested_commands,
)
from pipeline.ingest.tolerance import enforce
from tests.kits.adapters import make_spec

CANARY = "PWNED"
# Shell metacharacters, both quote kinds, newlines, NUL, ANSI, and a label that looks like our JSON form.
HOSTILE = [
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"x; touch {CANARY}",
    f"x' ; touch {CANARY}; echo '",
    f'x" ; touch {CANARY}; echo "',
    f"x\ntouch {CANARY}",
    f"x && touch {CANARY} || true",
    f"nul\x00; touch {CANARY}",
    f"\x1b[31mred\x1b[0m$(touch {CANARY})",
    f"a=b|touch {CANARY}",
    '"quoted"',
    "), then touch PWNED; (",
]
# Each call: its arguments separated by 0x1f, the call ended by 0x1e (an argument cannot hold NUL).
RECORDER = """#!/bin/sh
for a in "$@"; do printf '%s\\037' "$a"; done >> "$RECORD"
printf '\\036' >> "$RECORD"
"""


def _run_in_sandbox(tmp_path: Path, line: str) -> list[list[str]]:
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    recorder = bin_dir / "draftset"
    recorder.write_text(RECORDER)
    recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
    record = tmp_path / "record.jsonl"
    record.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RECORD": str(record), "HOME": str(work)}
    done = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=30)
    assert not (work / CANARY).exists(), f"the hint ran code: {line!r}"
    assert done.returncode == 0 and not done.stderr, f"{line!r}: {done.stderr}"
    calls = record.read_text().split("\x1e")[:-1]
    return [call.split("\x1f")[:-1] for call in calls]


def _hints(cat: Catalog, hostile: str) -> list[str]:
    """Every hint-producing path, fed `hostile` where a dataset or the Hub decides the text."""
    hints: list[str] = []

    def catch(fn, *args, **kw) -> None:
        with pytest.raises(DraftsetError) as info:
            fn(*args, **kw)
        assert info.value.hint
        hints.append(info.value.hint)

    repo = f"lab/{hostile}"
    catch(store.require, cat, repo)  # no adapter: propose it
    if "\x00" not in repo:  # a file name cannot hold NUL: such an id never gets a stored adapter
        store.save_spec(cat, make_spec(repo_id=repo))
        catch(review.approve, cat, repo, "rita")  # no contract yet
        catch(review.approve, cat, repo, "rita", force=True)  # --force needs --note
        catch(review.reject, cat, repo, "rita", "")  # reject needs --note
        catch(gate.require_approved, cat, repo)  # not approved
        review.reject(cat, repo, "rita", "no")
        catch(gate.require_approved, cat, repo)  # rejected
        # ingest past the bad-row threshold: fix the adapter or raise it, and re-run
        catch(enforce, make_spec(repo_id=repo), {"dropped_check_markup": 3}, 4, cat.home / "held", "run-1")
    gone = httpx.Response(404, request=httpx.Request("GET", "http://hub/x"))
    for exc in (
        hub_errors.RevisionNotFoundError("gone", response=gone),
        hub_errors.RemoteEntryNotFoundError("gone", response=gone),
    ):
        translated = translate(exc, "http://hub", repo_id=repo, revision="b" * 40)
        assert translated is not None and translated.hint
        hints.append(translated.hint)
    hints += review_queries(f"run-{hostile}", f"plan-{hostile}")
    return hints


@pytest.mark.parametrize("hostile", HOSTILE, ids=range(len(HOSTILE)))
def test_every_suggested_command_runs_draftset_and_nothing_else(tmp_path, hostile):
    cat = Catalog(tmp_path / "home")
    hints = _hints(cat, hostile)
    lines = [line for hint in hints for line in suggested_commands(hint)]
    assert all(suggested_commands(hint) for hint in hints)
    calls = _run_in_sandbox(tmp_path, "\n".join(lines))  # one shell runs them all, in order
    assert len(calls) == sum(line.count("draftset ") for line in lines), calls
    plain = [hostile] if "\x00" not in hostile and "\x1b" not in hostile and "\n" not in hostile else []
    for value in plain:  # a value a terminal shows as it is arrives as itself, one argument
        assert any(f"lab/{value}" in call for call in calls)


@pytest.mark.parametrize("label", HOSTILE + ["human", "gpt", "bot-2", "ユーザー"], ids=range(len(HOSTILE) + 4))
def test_the_label_a_hint_names_is_the_label_its_command_maps(tmp_path, label):
    spec = make_spec(role_map={"user": "user", "assistant": "assistant"})
    rows = [RawRow(0, {"messages": [{"role": label, "content": "hi"}, {"role": "assistant", "content": "ok"}]})]
    contract = run_contract(spec, rows)
    (check,) = [c for c in contract.checks if c.name == "roles_mapped"]
    assert not check.passed
    detail = check.detail
    assert label_word(label) in detail  # the label shown is the word the command carries
    (line,) = [c for c in suggested_commands(detail) if " map " in c]
    (argv,) = _run_in_sandbox(tmp_path, line.replace("=ROLE", "=system"))
    assert argv[:3] == ["adapters", "map", "lab/data"]
    mapped, role, _ = split_assignment(argv[3])
    assert mapped == label and role == "system"
    # ... and that word really maps it: the contract passes its role check afterwards.
    cat = Catalog(tmp_path / "home")
    store.save_spec(cat, spec)
    record = review.map_roles(cat, "lab/data", [argv[3]], "rita")
    again = run_contract(record.spec, rows)
    assert [c for c in again.checks if c.name == "roles_mapped"][0].passed


def test_the_helpers_quote_only_what_needs_it():
    assert command("draftset", "adapters", "test", "lab/plain") == "draftset adapters test lab/plain"
    assert shell_word("a b") == "'a b'"
    assert sql_command("SELECT 1 FROM t WHERE a = 'x'") == "draftset sql \"SELECT 1 FROM t WHERE a = 'x'\""
    assert sql_command("SELECT '$(x)'").startswith("draftset sql '")
    assert label_word("human") == "human" and label_from_word(label_word("\x00\x1b[2J")) == "\x00\x1b[2J"
    assert "\n" not in shell_word("a\nb") and "\x1b" not in shell_word("\x1b[31m")


def test_no_draftset_call_left_on_path(tmp_path):
    # The sandbox really would have run an injected command: the same shell with a plain `touch` makes the file.
    work = tmp_path / "w"
    work.mkdir()
    subprocess.run(["bash", "-c", f"touch {CANARY}"], cwd=work, env={"PATH": "/usr/bin:/bin"}, check=True)
    assert (work / CANARY).exists()
    assert os.environ.get("PATH")
