"""Mutation test of the adapter contract: corrupt each passing schema family the way real datasets are
corrupt, re-run proposal and contract, and count how often the contract catches it.

    .venv/bin/python -m eval.bench.mutation_kill [--corpus tests/fixtures/schema_corpus] [--only NAME] [--json OUT]

For every family the scoreboard maps right, each corruption below is applied to its raw rows (turn lists
decoded and re-encoded when the family stores them as JSON strings). The corrupted rows are detected,
proposed and contract-tested exactly as the scoreboard does. Outcomes:

    killed      proposal refused it or the contract failed (the failing checks are named)
    equivalent  the contract passed and the records equal the family's truth in the spec's mode (nothing
                that is trained changed: e.g. a wrapped answer in a regenerate-mode dataset, whose answers the
                target rewrites; or inference adapted to the corruption)
    SURVIVED    the contract passed and the records differ from the truth: silently wrong
    n/a         the corruption does not apply to this family's shape

Kill rate = killed / (killed + SURVIVED), per corruption and overall (goal: 100%). The controls are not
corruptions: the family's rows unmutated, metadata columns (proposal drops them by name) and a turn list stored
as a JSON string must still pass, so a kill there is a false alarm, reported apart. In the four outcomes every
bench reports (eval/bench/outcomes.py): a killed corruption is refused-as-expected, an equivalent one or a passing
control is right, a killed control is refused-wrongly (a false alarm), a survivor is silently-wrong. Figures, and what catches each former survivor:
eval/bench/mutation_kill_notes.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.infer.detect import detect
from adapters.infer.infer import AdapterRefused, build_proposal
from adapters.map.apply import RowMapper
from adapters.prove.contract import run_contract
from adapters.read.source import RawRow
from adapters.row_fields import get_path
from adapters.spec import AdapterSpec, SourceSpec
from catalog.errors import DraftsetError
from eval.bench.mutation_shape import Row, Shape, _edit_exchange, _set
from eval.bench.mutation_text import PARTIAL, TEXT_CORRUPTIONS
from eval.bench.outcomes import REFUSED_OK, REFUSED_WRONGLY, RIGHT, SILENT, summary_line, tally
from eval.bench.schema_scoreboard import DEFAULT_CORPUS, SAMPLE, _rows, canonical, score_family

WRITTEN_COMMAND = re.compile(r"```.*?```|<([A-Za-z][\w\-]*)>.+?</\1>", re.S)  # a fenced block or a tag pair
LABELS = ("coding", "math", "general", "writing")


# -- the corruptions ---------------------------------------------------------------------------------
def swap_prompt_answer(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The prompt and answer columns (or the first user/assistant texts) exchanged."""
    return _edit_exchange(shape, row, lambda p, a: (a, p))


def copy_prompt_to_answer(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The answer field holds the prompt again (an export that wrote one column twice)."""
    return _edit_exchange(shape, row, lambda p, a: (p, p))


def wrap_answers(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """Every answer wrapped in <answer> tags that the adapter does not know to strip."""
    cols = shape.columns()
    if cols:
        a = row.get(cols[1])
        return {**row, cols[1]: f"<answer>{a}</answer>"} if isinstance(a, str) else None
    if not shape.turn_list:
        return None
    turns, key = shape.turns(row), shape.spec.content_key or ""
    if turns is None:
        return None
    hit = False
    for i, t in enumerate(turns):
        if isinstance(t, dict) and get_path(t, shape.spec.role_key or "") in shape.labels("assistant"):
            text = get_path(t, key)
            if isinstance(text, str) and text.strip():
                turns[i], hit = _set(t, key, f"<answer>{text}</answer>"), True
    return shape.with_turns(row, turns) if hit else None


def system_label(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The assistant's role label renamed to `system` (a second speaker labelled like a system role)."""
    if not shape.turn_list:
        return None
    turns, role_key = shape.turns(row), shape.spec.role_key or ""
    if turns is None or shape.first_exchange(turns) is None:
        return None
    assistants = shape.labels("assistant")
    turns = [
        _set(t, role_key, "system") if isinstance(t, dict) and get_path(t, role_key) in assistants else t for t in turns
    ]
    return shape.with_turns(row, turns)


def rename_roles(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """User and assistant labels renamed to speaker_a / speaker_b (labels no table knows)."""
    if not shape.turn_list:
        return None
    turns, role_key = shape.turns(row), shape.spec.role_key or ""
    if turns is None or shape.first_exchange(turns) is None:
        return None
    names = {
        **{label: "speaker_a" for label in shape.labels("user")},
        **{x: "speaker_b" for x in shape.labels("assistant")},
    }
    turns = [
        _set(t, role_key, names[get_path(t, role_key)]) if isinstance(t, dict) and get_path(t, role_key) in names else t
        for t in turns
    ]
    return shape.with_turns(row, turns)


def move_text(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The second half of the prompt moved into a new column `details` (text split over two fields)."""
    moved: list[str] = []

    def edit(p: str, a: str) -> tuple[str, str]:
        words = p.split(" ")
        cut = len(words) // 2
        moved.append(" ".join(words[cut:]))
        return " ".join(words[:cut]), a

    out = _edit_exchange(shape, row, edit)
    if out is None or len(moved[0]) < 8 or len(p_words := moved[0].split()) < 2 or not p_words:
        return None
    return {**out, "details": moved[0]}


def label_prompt(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The prompt replaced by a short category label; the real request moved to a column `body`."""
    moved: list[str] = []

    def edit(p: str, a: str) -> tuple[str, str]:
        moved.append(p)
        return rng.choice(LABELS), a

    out = _edit_exchange(shape, row, edit)
    return None if out is None else {**out, "body": moved[0]}


def drop_turn(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The first user turn (or the prompt column) removed: the answer now answers nothing."""
    cols = shape.columns()
    first = cols[0] if cols else shape.prompt_column()
    if first:
        return {k: v for k, v in row.items() if k != first} if first in row else None
    found = shape.exchange(row)
    if found is None:
        return None
    turns, ex = found
    del turns[ex[0]]
    return shape.with_turns(row, turns)


def drop_call(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The first assistant step that calls a tool removed: its tool result now answers no call."""
    if not shape.turn_list:
        return None
    turns, role_key, calls_key = shape.turns(row), shape.spec.role_key or "", shape.spec.tool_calls_key
    if turns is None:
        return None
    callers = shape.labels("tool_call")
    for i, t in enumerate(turns):
        if not isinstance(t, dict):
            continue
        label = get_path(t, role_key)
        if label in callers or (label in shape.labels("assistant") and calls_key and t.get(calls_key)):
            if any(isinstance(x, dict) and get_path(x, role_key) in shape.labels("tool") for x in turns[i + 1 :]):
                del turns[i]
                return shape.with_turns(row, turns)
    return None


def drop_written_command(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """The commands an agent wrote in its text (fences, tags) cut out where the environment answers as its own
    speaker (a label other than the user's who opens the dialogue): its output now answers nothing. Where the
    output comes back under the user's own label, no row can tell the mutant from a user pasting output: n/a."""
    if not shape.turn_list:
        return None
    turns, key, role_key = shape.turns(row), shape.spec.content_key or "", shape.spec.role_key or ""
    if turns is None:
        return None
    labels = [get_path(t, role_key) if isinstance(t, dict) else None for t in turns]
    opener = next((x for x in labels if x in shape.labels("user")), None)
    environment = (shape.labels("user") | shape.labels("tool")) - {opener}
    hit = False
    for i, t in enumerate(turns[:-1]):
        text = get_path(t, key) if isinstance(t, dict) else None
        if labels[i] in shape.labels("assistant") and labels[i + 1] in environment and isinstance(text, str):
            cut = WRITTEN_COMMAND.sub("", text).strip()
            if cut != text.strip() and cut:
                turns[i], hit = _set(t, key, cut), True
    return shape.with_turns(row, turns) if hit else None


DOCUMENT_SENTENCES = (
    "The museum reopened its east wing after two years of restoration work.",
    "Visitors can now see the original ceiling, which had been hidden behind later panels.",
    "The city council approved the budget for the second phase in a short session.",
    "Local historians say the building was designed by an engineer rather than an architect.",
    "Most of the restored rooms will host temporary exhibitions from next spring.",
    "The restoration team documented every layer of paint they removed.",
)


def prompts_to_documents(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """A set of prompts whose column now holds whole articles (an export that wrote the page, not the request):
    documents under a request name, which must be refused as plain text, never regenerated from."""
    column = shape.prompt_column()
    if not column or not isinstance(row.get(column), str):
        return None
    paragraphs = [" ".join(rng.sample(DOCUMENT_SENTENCES, 4)) for _ in range(4)]
    return {**row, column: "\n\n".join(paragraphs)}


def encode_turns(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """Control: the turn list stored as a JSON string (as many exports do). Nothing changes: must pass."""
    path = shape.spec.messages_path
    if not shape.turn_list or not path or "." in path or shape.spec.completion_path:
        return None
    value = row.get(path)
    return {**row, path: json.dumps(value, ensure_ascii=False)} if isinstance(value, list) else None


def unmutated(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """Control: the row as it is, proposed afresh. A kill here is a false alarm on the family itself."""
    return copy.deepcopy(row)


def add_metadata(shape: Shape, row: Row, rng: random.Random) -> Row | None:
    """Control: id, url, timestamp and score columns added. Nothing trained changes: must still pass."""
    n = rng.randrange(10**9)
    return {
        **row,
        "uid": f"{n:016x}",
        "url": f"https://example.org/item/{n}",
        "created_at": f"2024-0{1 + n % 9}-1{n % 10}T12:00:00Z",
        "quality_score": round(rng.random(), 3),
    }


CORRUPTIONS: dict[str, Callable[[Shape, Row, random.Random], Row | None]] = {
    "swap_prompt_answer": swap_prompt_answer,
    "copy_prompt_to_answer": copy_prompt_to_answer,
    "wrap_answers": wrap_answers,
    "system_label": system_label,
    "rename_roles": rename_roles,
    "move_text": move_text,
    "label_prompt": label_prompt,
    "drop_turn": drop_turn,
    "drop_call": drop_call,
    "drop_written_command": drop_written_command,
    "prompts_to_documents": prompts_to_documents,
    **TEXT_CORRUPTIONS,  # on every third row (eval/bench/mutation_text.py)
}
CONTROLS = {"unmutated": unmutated, "add_metadata": add_metadata, "encode_turns": encode_turns}


# -- running one mutation --------------------------------------------------------------------------
@dataclass
class Result:
    family: str
    mutation: str
    outcome: str  # killed | equivalent | SURVIVED | n/a
    detail: str
    seconds: float = 0.0

    @property
    def scored(self) -> str | None:
        """The outcome among the four every bench reports (None: the mutation does not apply)."""
        if self.outcome == "n/a":
            return None
        if self.outcome == "killed":
            return REFUSED_WRONGLY if self.mutation in CONTROLS else REFUSED_OK
        return RIGHT if self.outcome == "equivalent" else SILENT


def _in_mode(truth: dict[str, Any], spec: AdapterSpec) -> list[dict[str, Any]]:
    """The truth's messages as the spec's mode trains them (regenerate: the context up to the cut)."""
    msgs = [dict(m) for m in truth["messages"]]
    if spec.mode == "regenerate":
        users = [i for i, m in enumerate(msgs) if m["role"] == "user"]
        if users:
            msgs = msgs[: (users[0] if spec.cut == "first_user" else users[-1]) + 1]
        for m in msgs:
            m.pop("train", None)
    return msgs


def _same_as_truth(spec: AdapterSpec, raw: list[RawRow], truth: list[dict[str, Any] | None]) -> str:
    """'' when every row maps to its truth in the spec's mode, else the first difference."""
    mapper = RowMapper(spec)
    for r, t in zip(raw, truth):
        if t is None:
            continue
        try:
            got = canonical(mapper.apply(r.row_index, r.row)[0])["messages"]
        except Exception as exc:  # noqa: BLE001 - a row the adapter now rejects differs from its truth
            return f"row {r.row_index} rejected: {str(exc)[:80]}"
        if spec.mode == "regenerate":
            for m in got:
                m.pop("train", None)
        want = [{k: (v.strip() if isinstance(v, str) else v) for k, v in m.items()} for m in _in_mode(t, spec)]
        if got != want:
            return f"row {r.row_index} differs from its truth"
    return ""


def mutate_family(folder: Path, name: str, fn: Callable[[Shape, Row, random.Random], Row | None]) -> Result:
    meta = json.loads((folder / "family.json").read_text())
    card = (folder / "README.md").read_text()
    raw = _rows(folder, meta["files"])[:SAMPLE]
    source = SourceSpec(
        repo_id=f"corpus/{meta['name']}", revision="0" * 40, config="default", split="train", data_files=meta["files"]
    )
    base_rows = [(r.row_index, r.row) for r in raw if r.row is not None]
    d0 = detect([row for _, row in base_rows], features=meta["features"], card_text=card, file_names=meta["files"])
    shape = Shape(build_proposal(d0, base_rows, source, card).spec)
    rng = random.Random(f"{meta['name']}/{name}")
    mutated, truth, changed = [], [], 0
    partial = name in PARTIAL
    for k, (r, t) in enumerate(zip(raw, meta["truth"])):
        chosen = not partial or k % 3 == 0
        new = fn(shape, r.row, rng) if isinstance(r.row, dict) and chosen else None
        changed += new is not None
        mutated.append(RawRow(r.row_index, new if new is not None else r.row, r.error))
        truth.append(t)
    if changed < (2 if partial else max(1, len(raw) // 2)):
        return Result(meta["name"], name, "n/a", f"applies to {changed}/{len(raw)} rows")
    start = time.perf_counter()
    rows = [(r.row_index, r.row) for r in mutated if r.row is not None]
    d = detect([row for _, row in rows], features=meta["features"], card_text=card, file_names=meta["files"])
    try:
        spec = build_proposal(d, rows, source, card).spec
    except AdapterRefused as exc:
        return Result(meta["name"], name, "killed", f"proposal refused: {exc.verdict}", time.perf_counter() - start)
    except DraftsetError as exc:
        return Result(meta["name"], name, "killed", f"no proposal: {str(exc)[:80]}", time.perf_counter() - start)
    result = run_contract(spec, mutated)
    seconds = time.perf_counter() - start
    if not result.passed:
        return Result(meta["name"], name, "killed", ", ".join(c.name for c in result.failures()), seconds)
    diff = _same_as_truth(spec, mutated, truth)
    if not diff:
        return Result(meta["name"], name, "equivalent", "records equal the truth in the spec's mode", seconds)
    return Result(meta["name"], name, "SURVIVED", f"contract passed but {diff}", seconds)


def passing_families(corpus: Path, only: list[str] | None = None) -> list[Path]:
    folders = sorted(p for p in corpus.iterdir() if (p / "family.json").exists())
    if only:
        folders = [p for p in folders if p.name in only]
    return [p for p in folders if score_family(p).outcome == "right"]


def run(corpus: Path, only: list[str] | None = None, mutations: list[str] | None = None) -> list[Result]:
    todo = {**CORRUPTIONS, **CONTROLS}
    if mutations:
        todo = {k: v for k, v in todo.items() if k in mutations}
    return [mutate_family(folder, name, fn) for folder in passing_families(corpus, only) for name, fn in todo.items()]


def report(results: list[Result], verbose: bool = True) -> dict[str, Any]:
    per: dict[str, Counter[str]] = {}
    for r in results:
        per.setdefault(r.mutation, Counter())[r.outcome] += 1
    if verbose:
        for r in results:
            if r.outcome in ("SURVIVED",) or (r.mutation in CONTROLS and r.outcome == "killed"):
                print(f"  {r.outcome:<9} {r.mutation:<22} {r.family:<36} {r.detail[:110]}")
    print(f"\n{'mutation':<22} {'killed':>6} {'survived':>8} {'equiv':>5} {'n/a':>4}  kill rate")
    killed = survived = 0
    rates = {}
    for name in [*CORRUPTIONS, *CONTROLS]:
        c = per.get(name)
        if c is None:
            continue
        k, s = c["killed"], c["SURVIVED"]
        rate = k / (k + s) if k + s else 1.0
        if name in CORRUPTIONS:
            killed, survived = killed + k, survived + s
            rates[name] = rate
        label = f"{rate:6.0%}" if name in CORRUPTIONS else f"control: {k} false alarm(s)"
        print(f"{name:<22} {k:>6} {s:>8} {c['equivalent']:>5} {c['n/a']:>4}  {label}")
    overall = killed / (killed + survived) if killed + survived else 1.0
    false_alarms = sum(1 for r in results if r.mutation in CONTROLS and r.outcome == "killed")
    print(
        f"\noverall kill rate {overall:.1%} ({killed}/{killed + survived}); {false_alarms} false alarm(s) on controls"
    )
    counts = tally(r.scored for r in results if r.scored)
    print(summary_line(counts, "mutation runs (corruptions and controls)"))
    return {
        "counts": counts,
        "overall": overall,
        "killed": killed,
        "survived": survived,
        "rates": rates,
        "false_alarms": false_alarms,
        "survivors": [r.__dict__ for r in results if r.outcome == "SURVIVED"],
        "results": [r.__dict__ for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--only", nargs="*", help="family names")
    parser.add_argument("--mutation", nargs="*", help="mutation names")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    summary = report(run(args.corpus, args.only, args.mutation))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
