"""LLaMA-Factory's registry, reproduced: is every local entry of data/dataset_info.json mapped right, refused by
name, or silently wrong?

    .venv/bin/python -m eval.bench.llamafactory_registry [--data tests/fixtures/llamafactory/data] [--json OUT]

Each entry's file is read with the product's file reader, detected by the one detector, proposed
(`build_proposal`) and contract-tested as `draftset adapters propose` does, minus the Hub transport, without
looking at the registry. The registry entry is then the oracle: a small reading of LLaMA-Factory's own
semantics (alpaca: instruction + input → user, output → assistant, `history`, `system`; sharegpt: the tags,
`function_call` → an assistant call, `observation` → a tool result, strict user/assistant alternation with
rows breaking it dropped; `ranking`: chosen/rejected; `kto_tag`; media columns; a `prompt`-only entry is
pre-training text) says what every row must become, and so what each entry's expected outcome is (`expectation`:
map, or refuse:media / refuse:plain_text). The four outcomes of eval/bench/outcomes.py:

    right                the contract passes and every row maps as the registry reads it (rows LLaMA-Factory
                         drops are rejected by name, never mapped)
    refused-as-expected  refused by the expected name: media for a text-only target, or plain text with no turns
    refused-wrongly      an entry LLaMA-Factory trains on is refused (a proposal refusal, a failing contract), or
                         one refused under another name than expected
    silently-wrong       the contract passes but some row differs from the registry's reading
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from adapters.infer.detect import detect
from adapters.infer.infer import AdapterRefused, build_proposal
from adapters.map.apply import RowError, RowMapper
from adapters.prove.contract import run_contract
from adapters.read.files import datasets_module, iter_file
from adapters.read.source import RawRow
from adapters.records import Conversation
from adapters.spec import SourceSpec
from catalog.errors import DraftsetError
from eval.bench.outcomes import REFUSED_OK, REFUSED_WRONGLY, SILENT, passed, refusal, summary_line, tally

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "llamafactory" / "data"
SAMPLE = 300
MEDIA_COLUMNS = ("images", "videos", "audios")
SHAREGPT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "observation_tag": "observation",
    "function_tag": "function_call",
    "system_tag": "system",
}


@dataclass
class Entry:
    name: str
    expect: str  # map | refuse:<verdict>
    outcome: str  # one of eval/bench/outcomes.py OUTCOMES
    detail: str
    seconds: float


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def expectation(entry: dict[str, Any]) -> str:
    cols = entry.get("columns", {})
    if any(c in cols for c in MEDIA_COLUMNS):
        return "refuse:media"
    if entry.get("formatting", "alpaca") == "alpaca" and set(cols) == {"prompt"}:
        return "refuse:plain_text"  # LLaMA-Factory's pre-training entries: one text column, nothing answers it
    return "map"


def _call(text: str) -> list[Any]:
    data = json.loads(text)
    calls = data if isinstance(data, list) else [data]
    return [[c["name"], c.get("arguments", {})] for c in calls]


def _sharegpt_turns(turns: list[dict[str, Any]], tags: dict[str, str]) -> list[dict[str, Any]] | None:
    """LLaMA-Factory's sharegpt reading; None where its converter drops the row (broken alternation)."""
    role_of = {
        tags["user_tag"]: "user",
        tags["assistant_tag"]: "assistant",
        tags["observation_tag"]: "tool",
        tags["function_tag"]: "call",
    }
    out: list[dict[str, Any]] = []
    if turns and turns[0].get(tags["role_tag"]) == tags["system_tag"]:
        out.append({"role": "system", "content": _norm(turns[0][tags["content_tag"]])})
        turns = turns[1:]
    for i, t in enumerate(turns):
        role = role_of.get(str(t.get(tags["role_tag"])))
        if role is None or (role in ("user", "tool")) != (i % 2 == 0):
            return None  # odd positions: user or observation; even: assistant or function_call
        text = t[tags["content_tag"]]
        if role == "call":
            out.append({"role": "assistant", "content": "", "calls": _call(text)})
        else:
            out.append({"role": role, "content": _norm(text)})
    return out


def registry_truth(entry: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
    """What LLaMA-Factory makes of one row under its registry entry (native answers), or None: dropped."""
    cols = entry.get("columns", {})
    if entry.get("formatting", "alpaca") == "alpaca":
        prompt = row[cols.get("prompt", "instruction")]
        query = row.get(cols.get("query", "input")) or ""
        single = [{"role": "user", "content": _norm(f"{prompt}\n{query}" if query else prompt)}]
        if not entry.get("ranking"):
            single.append({"role": "assistant", "content": _norm(row[cols.get("response", "output")])})
        return {"messages": single}
    tags = {**SHAREGPT_TAGS, **entry.get("tags", {})}
    msgs = _sharegpt_turns(row[cols.get("messages", "conversations")], tags)
    if msgs is None:
        return None
    out: dict[str, Any] = {"messages": msgs}
    if entry.get("ranking"):
        chosen, rejected = (row[cols[k]] for k in ("chosen", "rejected"))
        out["messages"] = msgs + [{"role": "assistant", "content": _norm(chosen[tags["content_tag"]])}]
        out["rejected"] = [
            {"role": "assistant", "content": _norm(rejected[tags["content_tag"]])}
        ]  # after the shared prompt
    if "tools" in cols:
        tools = json.loads(row[cols["tools"]] or "[]")
        out["tools"] = sorted(t["name"] for t in tools)
    if "kto_tag" in cols:
        out["label"] = bool(row[cols["kto_tag"]])
    return out


def canonical(rec: Conversation) -> dict[str, Any]:
    def msg(m: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"role": m.role, "content": _norm(m.content)}
        if m.tool_calls:
            out["calls"] = [[c.function.name, json.loads(c.function.arguments)] for c in m.tool_calls]
        return out

    got: dict[str, Any] = {"messages": [msg(m) for m in rec.messages]}
    if rec.preference:
        got["rejected"] = [msg(m) for m in rec.preference.rejected]
    if rec.tools is not None:
        got["tools"] = sorted(t.function.name for t in rec.tools)
    if rec.label is not None:
        got["label"] = rec.label
    return got


def _rows(path: Path) -> list[RawRow]:
    return [RawRow(i, row, err) for i, (row, err) in enumerate(iter_file(path, path.name))]


def _mismatch(entry: dict[str, Any], mapper: RowMapper, raw: list[RawRow]) -> str:
    for r in raw:
        if r.row is None:
            continue
        want = registry_truth(entry, r.row)
        try:
            got = canonical(mapper.apply(r.row_index, r.row)[0])
        except RowError as exc:
            if want is None or (want.get("label") is False and "undesirable" in exc.reason):
                continue  # dropped by LLaMA-Factory and refused by name here; an undesirable KTO answer
            return f"row {r.row_index} rejected ({exc}) but LLaMA-Factory reads it"
        if want is None:
            return f"row {r.row_index} mapped but LLaMA-Factory drops it (broken alternation)"
        if "tools" not in want:
            got.pop("tools", None)
        if got != want:
            key = next(k for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k))
            return f"row {r.row_index} differs at {key}: got {json.dumps(got.get(key))[:80]} want {json.dumps(want.get(key))[:80]}"
    return ""


def score(name: str, entry: dict[str, Any], data: Path) -> Entry:
    expect, path = expectation(entry), data / entry["file_name"]
    start = time.perf_counter()
    raw = _rows(path)
    rows = [(r.row_index, r.row) for r in raw if r.row is not None]
    source = SourceSpec(
        repo_id=f"llamafactory/{name}",
        revision="0" * 40,
        config="default",
        split="train",
        data_files=[entry["file_name"]],
    )
    d = detect([r for _, r in rows][:SAMPLE], file_names=[entry["file_name"]])
    try:
        proposal = build_proposal(d, rows, source, "")
    except AdapterRefused as exc:
        took = time.perf_counter() - start
        detail = f"refused as {exc.verdict}: {str(exc).split(': ', 1)[-1][:90]}"
        return Entry(name, expect, refusal(expect, exc.verdict), detail, took)
    except DraftsetError as exc:
        return Entry(name, expect, REFUSED_WRONGLY, f"no proposal: {str(exc)[:100]}", time.perf_counter() - start)
    took = time.perf_counter() - start
    result = run_contract(proposal.spec, raw[:SAMPLE])
    if not result.passed:
        verdict = result.verdict.removeprefix("refused: ") if result.verdict.startswith("refused: ") else None
        outcome = refusal(expect, verdict)
        return Entry(
            name,
            expect,
            outcome,
            result.summary()[:110] if outcome == REFUSED_OK else f"contract {result.summary()[:100]}",
            took,
        )
    if expect != "map":
        return Entry(name, expect, SILENT, f"contract passed but must be refused: {result.summary()[:90]}", took)
    bad = _mismatch(entry, RowMapper(proposal.spec.model_copy(update={"mode": "native"})), raw)
    if bad:
        return Entry(name, expect, passed(expect, False), f"contract passed but {bad}", took)
    spec = proposal.spec
    where = spec.columns.prompt if spec.columns else spec.messages_path
    detail = f"{spec.layout} {where} ({result.n_records}/{result.n_rows} rows)"
    return Entry(name, expect, passed(expect, True), detail, took)


def run(data: Path) -> list[Entry]:
    datasets_module("x.json")  # `datasets`' extension table: imported once per process, not per entry
    info = json.loads((data / "dataset_info.json").read_text())
    return [score(name, entry, data) for name, entry in info.items() if "file_name" in entry]


def report(entries: list[Entry]) -> dict[str, Any]:
    width = max(len(e.name) for e in entries)
    for e in entries:
        print(f"{e.name:<{width}}  {e.expect:<18} {e.outcome:<19} {e.seconds * 1000:6.0f} ms  {e.detail}")
    counts = tally(e.outcome for e in entries)
    good = counts["right"] + counts["refused-as-expected"]
    print(
        f"\nLLaMA-Factory registry, {good}/{len(entries)} right or refused as expected. "
        f"{summary_line(counts, 'local entries')}; slowest proposal {max(e.seconds for e in entries):.2f} s"
    )
    return {"counts": counts, "entries": [asdict(e) for e in entries]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    summary = report(run(args.data))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
