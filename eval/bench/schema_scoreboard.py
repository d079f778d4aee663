"""Schema scoreboard: does adapter inference get public schema families right, refuse them by name, or
get them silently wrong? And does find keep the relevant ones?

    .venv/bin/python -m eval.bench.schema_scoreboard [--corpus tests/fixtures/schema_corpus] [--json OUT]

For each family folder (tests/fixtures/schemas/make_corpus.py writes them) the data files are read with
the product's file readers, detected by the one detector, proposed (`build_proposal`) and contract-tested
exactly as `draftset adapters propose` does, minus the Hub transport. Each family declares its expected
outcome in family.json (`expect`: `map`, or `refuse:<verdict>`); the four outcomes (eval/bench/outcomes.py):

    right                the contract passes and every row maps to its canonical truth (native mode: roles,
                         texts, reasoning, tool calls with parsed arguments, per-turn training flags, preference,
                         label)
    refused-as-expected  refused by the expected name (proposal refusal, or the contract's `refused: <name>`)
    refused-wrongly      a family that should map is refused (the proposal refuses or fails, the contract fails),
                         or one that must be refused is refused under another name
    silently-wrong       the contract passes but the records differ from the truth, or a family that must be
                         refused passes

Discovery: find's scoring (agents/scoring.py, the same detector) is run on every family as a candidate of
the `agentic` and `coding` categories for the domain "agentic coding" (kept when either keeps it);
recall/precision are over families that are in the domain and mappable.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.infer.detect import detect
from adapters.infer.infer import AdapterRefused, build_proposal
from adapters.map.apply import RowError, RowMapper
from adapters.prove.contract import ContractResult, run_contract
from adapters.read.files import datasets_module, file_format, iter_file
from adapters.read.source import RawRow
from adapters.records import Conversation, Message
from adapters.spec import AdapterSpec, SourceSpec
from catalog.errors import DraftsetError
from eval.bench.outcomes import REFUSED_OK, REFUSED_WRONGLY, SILENT, passed, refusal, summary_line, tally

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "schema_corpus"
SAMPLE = 300


@dataclass
class Outcome:
    family: str
    expect: str
    outcome: str  # one of eval/bench/outcomes.py OUTCOMES
    detail: str
    seconds: float
    relevant: bool
    found_relevant: bool | None = None
    contract_seconds: float = 0.0


def _rows(folder: Path, files: list[str]) -> list[RawRow]:
    out, index = [], 0
    for name in files:
        if file_format(name) is None:
            continue
        for row, error in iter_file(folder / name, name):
            out.append(RawRow(index, row, error))
            index += 1
    return out


def canonical(rec: Conversation) -> dict[str, Any]:
    def msg(m: Message) -> dict[str, Any]:
        out: dict[str, Any] = {"role": m.role, "content": m.content.strip()}
        if m.reasoning:
            out["reasoning"] = m.reasoning.strip()
        if m.tool_calls:
            out["calls"] = [[c.function.name, _args(c.function.arguments)] for c in m.tool_calls]
        if m.train is False and m.role == "assistant":
            out["train"] = False
        return out

    got: dict[str, Any] = {"messages": [msg(m) for m in rec.messages]}
    if rec.preference:
        got["rejected"] = [msg(m) for m in rec.preference.rejected]
        for m in got["rejected"]:
            m.pop("train", None)
    if rec.label is not None:
        got["label"] = rec.label
    return got


def _args(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _truth_cmp(truth: dict[str, Any]) -> dict[str, Any]:
    t = json.loads(json.dumps(truth))
    for m in t.get("rejected", []):
        m.pop("train", None)
    return t


def score_family(folder: Path) -> Outcome:
    meta = json.loads((folder / "family.json").read_text())
    name, expect = meta["name"], meta["expect"]
    card = (folder / "README.md").read_text()
    start = time.perf_counter()
    raw = _rows(folder, meta["files"])
    rows = [(r.row_index, r.row) for r in raw if r.row is not None]
    source = SourceSpec(
        repo_id=f"corpus/{name}", revision="0" * 40, config="default", split="train", data_files=meta["files"]
    )
    d = detect([r for _, r in rows][:SAMPLE], features=meta["features"], card_text=card, file_names=meta["files"])
    try:
        proposal = build_proposal(d, rows, source, card)
    except AdapterRefused as exc:
        seconds = time.perf_counter() - start
        scored = refusal(expect, exc.verdict)
        detail = str(exc).split(": ", 1)[-1][:110] if scored == REFUSED_OK else f"refused as {exc.verdict}: {exc}"
        return Outcome(name, expect, scored, detail[:120], seconds, meta["relevant"])
    except DraftsetError as exc:
        return Outcome(
            name,
            expect,
            REFUSED_WRONGLY,
            f"no proposal: {str(exc)[:100]}",
            time.perf_counter() - start,
            meta["relevant"],
        )
    seconds = time.perf_counter() - start
    spec = proposal.spec
    started = time.perf_counter()
    result = run_contract(spec, raw[:SAMPLE])
    outcome = _judge(name, expect, meta, spec, raw, result, seconds)
    outcome.contract_seconds = time.perf_counter() - started
    return outcome


def _judge(
    name: str,
    expect: str,
    meta: dict[str, Any],
    spec: AdapterSpec,
    raw: list[RawRow],
    result: ContractResult,
    seconds: float,
) -> Outcome:
    """The outcome of a proposal whose contract ran, one of the four (eval/bench/outcomes.py)."""
    if not result.passed:
        verdict = result.verdict.removeprefix("refused: ") if result.verdict.startswith("refused: ") else None
        outcome = refusal(expect, verdict)
        detail = result.summary()[:110] if outcome == REFUSED_OK else f"contract {result.summary()[:100]}"
        return Outcome(name, expect, outcome, detail, seconds, meta["relevant"])
    if expect != "map":
        detail = f"mapped and passed ({spec.layout}) but must be refused as {expect.split(':', 1)[1]}"
        return Outcome(name, expect, SILENT, detail, seconds, meta["relevant"])
    bad = _mismatches(spec, raw, meta["truth"])
    outcome = passed(expect, not bad)
    detail = f"contract passed but {bad}" if bad else f"{spec.layout} {_describe(spec)}"
    return Outcome(name, expect, outcome, detail, seconds, meta["relevant"])


def _mismatches(spec: AdapterSpec, raw: list[RawRow], truth: list[dict[str, Any] | None]) -> str:
    # native mode keeps every answer for the comparison; a set of prompts alone has none, its truth is the prompt
    prompts_alone = spec.layout == "columns" and spec.columns and spec.columns.response is None and not spec.candidates
    update: dict[str, Any] = {"mode": "regenerate" if prompts_alone else "native"}
    if spec.candidates:  # the truth of a candidates family is its `best` reading (the winner, the loser rejected)
        update["candidates"] = spec.candidates.model_copy(update={"policy": "best"})
    native = RowMapper(spec.model_copy(update=update))
    for r, t in zip(raw, truth):
        try:
            rec = native.apply(r.row_index, r.row)[0]
            got = canonical(rec)
            if t is not None and "tools" in t:  # a family whose truth names its declared tools: compared too
                got["tools"] = sorted(x.function.name for x in rec.tools or [])
        except RowError as exc:
            if t is not None and t.get("label") is False and "undesirable" in exc.reason:
                continue  # an undesirable answer is refused for training, by name: right
            if t is None:
                continue
            return f"row {r.row_index} raised {exc}"
        if t is None:
            return f"row {r.row_index} mapped although it must be rejected"
        want = _truth_cmp(t)
        if got != want:
            return f"row {r.row_index} differs at {_first_diff(got, want)}"
    return ""


def _first_diff(got: Any, want: Any, path: str = "") -> str:
    """The first place two canonical records differ, short enough for one line."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            if got.get(key) != want.get(key):
                return _first_diff(got.get(key), want.get(key), f"{path}.{key}")
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return f"{path}: {len(got)} items, want {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                return _first_diff(a, b, f"{path}[{i}]")
    return f"{path}: got {json.dumps(got)[:70]} want {json.dumps(want)[:70]}"


def _describe(spec: AdapterSpec) -> str:
    if spec.layout == "columns" and spec.columns:  # the spec validator requires them for this layout
        return f"{spec.columns.prompt}→{spec.columns.response}"
    if spec.layout == "turn_columns" and spec.turn_columns:
        return "→".join(f"{t.field}" for t in spec.turn_columns[:4]) + ("…" if len(spec.turn_columns) > 4 else "")
    if spec.layout == "transcript" and spec.transcript:
        return f"{spec.transcript.field} markers {sorted(spec.transcript.markers)}"
    return f"{spec.messages_path} role={spec.role_key} content={spec.content_key}"


def discovery(folder: Path) -> bool | None:
    """find's verdict on this family for "agentic coding": kept when the `agentic` or the `coding` agent keeps it."""
    from agents.configuration import FindConfig
    from agents.scoring import score_candidate

    meta = json.loads((folder / "family.json").read_text())
    raw = _rows(folder, meta["files"])[:10]
    rows = [r.row for r in raw if r.row is not None]
    card = (folder / "README.md").read_text()
    hit = {
        "repo_id": f"corpus/{meta['name']}",
        "sha": "0" * 40,
        "downloads": 1000,
        "likes": 1,
        "gated": False,
        "tags": ["license:mit"],
        "card_data": {"license": "mit"},
    }
    facts = {
        "card_text": card,
        "card_error": None,
        "access": "ok",
        "configs": [
            {
                "config": "default",
                "split": "train",
                "num_rows": 1000,
                "num_bytes": 10_000,
                "features": meta["features"],
                "rows": rows,
            }
        ],
    }
    return any(
        score_candidate(cat, "agentic coding", hit, facts, FindConfig()).status == "relevant"
        for cat in ("agentic", "coding")
    )


def run(corpus: Path) -> list[Outcome]:
    # `datasets`' extension table is imported once per process (propose has imported `datasets` already when it
    # reads files): a one-off cost, not the first family's proposal time
    datasets_module("x.json")
    outcomes = []
    for folder in sorted(p for p in corpus.iterdir() if (p / "family.json").exists()):
        o = score_family(folder)
        o.found_relevant = discovery(folder)
        outcomes.append(o)
    return outcomes


def report(outcomes: list[Outcome]) -> dict[str, Any]:
    width = max(len(o.family) for o in outcomes)
    for o in outcomes:
        print(f"{o.family:<{width}}  {o.expect:<26} {o.outcome:<19} {o.seconds * 1000:6.0f} ms  {o.detail}")
    counts = tally(o.outcome for o in outcomes)
    truly = {o.family for o in outcomes if o.relevant and o.expect == "map"}
    kept = {o.family for o in outcomes if o.found_relevant}
    recall = len(truly & kept) / len(truly) if truly else 1.0
    in_domain_kept = {o.family for o in outcomes if o.found_relevant and o.relevant}
    precision = len(in_domain_kept & truly) / len(kept) if kept else 1.0
    slowest = max(o.seconds for o in outcomes)
    slowest_contract = max(o.contract_seconds for o in outcomes)
    print(
        f"\n{summary_line(counts, 'families')}; slowest proposal {slowest:.2f} s, "
        f"slowest contract {slowest_contract:.2f} s"
    )
    missed = sorted(truly - kept)
    extra = sorted(kept - truly)
    print(
        f"discovery (agentic coding): recall {recall:.2f} ({len(truly & kept)}/{len(truly)}), precision "
        f"{precision:.2f} ({len(in_domain_kept & truly)}/{len(kept)})"
        + (f"; missed {missed}" if missed else "")
        + (f"; kept although their source is labelled off-domain (rows about software): {len(extra)}" if extra else "")
    )
    return {
        "counts": counts,
        "recall": recall,
        "precision": precision,
        "slowest_s": slowest,
        "slowest_contract_s": slowest_contract,
        "families": [o.__dict__ for o in outcomes],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--json", type=Path, help="also write the scoreboard as JSON here")
    args = parser.parse_args()
    summary = report(run(args.corpus))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
