"""Benchmark find's relevance: precision and recall of the kept set (status relevant or planned) against labelled
relevance over the fixture Hub, card words only (the previous behaviour) vs card words checked against the
sampled rows' content, in the same run; with find's wall and CPU time (medians; CPU is find's own process, the
local Hub runs in another, so it is the figure a shared machine disturbs least) and the content probe's own cost.

    .venv/bin/python -m eval.bench.find_relevance [--repeats 3]
    .venv/bin/python -m eval.bench.find_relevance --heldout-seeds 101,102,103   # generated held-out hubs

With --heldout-seeds it generates one held-out hub per seed (eval/bench/find_heldout_hub.py: coding data without
code blocks, other domains under the domain's words, ids without seed words) and reports, for the same two
variants, recall, off-domain kept, repos found whose id lacks every seed word, and candidates left for review.

The labels are below, one line of why per repo: relevant = text training data one of the categories wants
for "agentic coding"; not relevant = no text (image, audio, tabular), no rows, or a card whose words are used in
another sense (insurance agents, spy-film scripts, the genetic code, medical coding). They are the bench's
ground truth, written by reading the rows, never read by find.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agents.configuration import FindConfig
from eval.bench.bench_hub import local_hub

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_HUB = ROOT / "tests" / "fixtures" / "hub"
DOMAIN = "agentic coding"

NOT_RELEVANT = {
    "vision-mini/image-captions": "images",
    "audio-mini/speech-commands": "audio",
    "tabular-mini/housing-prices": "numbers only",
    "empty-org/empty-dataset": "no rows",
    "callcenter-lab/insurance-agent-calls": "insurance agents on the phone: no tools, no code",
    "screenplays-archive/secret-agent-scripts": "spy-film scripts",
    "genelab/gene-code-instruct": "DNA coding sequences, not programs",
    "clinical-nlp/medical-coding-instruct": "ICD-10/CPT medical coding",
}
HIDDEN = {  # relevant, under a card that names none of the domain's words
    "qingliu/agents-zh-traces": "tool-call trajectories, Chinese card",
    "devlogs/toolbelt-sessions": "shell sessions, one-word card",
    "kodeks/coder-ja": "Python Q&A, Japanese card",
}
VARIANTS = {
    "card words only (before)": FindConfig(content_relevance=False, explore_slots=0, inspect_top=8),
    "card + sampled rows (after)": FindConfig(),
}


def _repos(hub: Path) -> set[str]:
    return {f"{owner.name}/{repo.name}" for owner in hub.iterdir() if owner.is_dir() for repo in owner.iterdir()}


def _find(url: str, home: Path, config: FindConfig) -> tuple[float, dict[str, str], int, float]:
    from agents.run import FindEnv, FindRequest, run_find  # after HF_HOME is set: read at import
    from catalog import Catalog

    env = FindEnv(home=home, endpoint=url, viewer_base=url + "/viewer")
    t0, cpu0 = time.perf_counter(), time.process_time()
    final = asyncio.run(run_find(env, FindRequest(DOMAIN, 100_000, config)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0  # cpu: find's own (the Hub is a subprocess)
    rows = Catalog(home).query("SELECT repo_id, status FROM candidates")
    return wall, {r["repo_id"]: r["status"] for r in rows}, final["state"]["summary"]["hub_calls"], cpu


def _probe_cost(home: Path) -> tuple[float, int]:
    """Median milliseconds of the content probe per candidate, over the rows find stored in its catalog."""
    from adapters.detected import Detected
    from adapters.infer.trial import trial_records
    from agents import content
    from catalog import Catalog

    samples = [
        (r["sample_rows"], r["detected"])
        for r in Catalog(home).query("SELECT sample_rows, detected FROM schemas WHERE detected IS NOT NULL")
    ]
    import json

    times = []
    for rows, detected in samples:
        rows, d = json.loads(rows), Detected.from_json(json.loads(detected))
        records = trial_records(d, rows)  # scoring maps the rows anyway (trial yield): not the probe's cost
        t0 = time.perf_counter()
        content.signals(rows, d, records)
        times.append((time.perf_counter() - t0) * 1000)
    return (statistics.median(times) if times else 0.0), len(times)


def _scores(kept: set[str], relevant: set[str], seen: set[str]) -> dict[str, float]:
    hit = kept & relevant
    return {
        "precision": len(hit) / len(kept) if kept else 0.0,
        "recall": len(hit) / len(relevant),
        "recall_seen": len(hit) / len(relevant & seen) if relevant & seen else 0.0,
    }


def heldout(seeds: list[int]) -> None:
    """Recall, off-domain kept and discovery by content on generated held-out hubs (eval/bench/find_heldout_hub.py),
    card words only (the naive baseline) and card + rows, per seed and summed."""
    from eval.bench.find_heldout_hub import generate

    table = Table(title=f'find "{DOMAIN}" over held-out hubs (seeds {", ".join(map(str, seeds))})')
    for col in (
        "seed",
        "variant",
        "relevant",
        "found",
        "found w/o seed word",
        "kept (recall)",
        "off-domain kept",
        "review",
        "missed",
        "wrongly kept",
    ):
        table.add_column(col, overflow="fold")
    totals: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-heldout-") as tmp_:
        tmp = Path(tmp_)
        os.environ["HF_HOME"] = str(tmp / "hf")
        for seed in seeds:
            labels = generate(tmp / f"hub-{seed}", seed)
            relevant = {r for r, lab in labels.items() if lab["relevant"]}
            off = {r for r, lab in labels.items() if lab["relevant"] is False}
            hidden = {r for r in relevant if labels[r]["seedless"]}
            with local_hub(tmp / f"hub-{seed}")() as url:
                for variant, config in VARIANTS.items():
                    home = tmp / f"home-{seed}-{len(totals)}-{variant[:4]}"
                    _, statuses, _, _ = _find(url, home, config.model_copy(update={"cache": False}))
                    from catalog import Catalog

                    flags = {
                        r["repo_id"]: r["flags"] or ""
                        for r in Catalog(home).query("SELECT repo_id, flags FROM candidate_status")
                    }
                    kept = {r for r, s in statuses.items() if s in ("relevant", "planned")}
                    row = [
                        len(relevant),
                        len(relevant & set(statuses)),
                        len(hidden & set(statuses)),
                        len(kept & relevant),
                        len(kept & off),
                        sum("relevance_review" in flags[r] for r in kept),
                    ]
                    totals[variant] = [a + b for a, b in zip(totals.get(variant, [0] * 7), row + [len(hidden)])]
                    table.add_row(
                        str(seed),
                        variant,
                        *map(str, row[:2]),
                        f"{row[2]}/{len(hidden)}",
                        f"{row[3]} ({row[3] / len(relevant):.2f})",
                        str(row[4]),
                        str(row[5]),
                        ", ".join(sorted(relevant - kept)) or "-",
                        ", ".join(sorted(kept & off)) or "-",
                    )
    for variant, t in totals.items():
        table.add_row(
            "all",
            variant,
            str(t[0]),
            str(t[1]),
            f"{t[2]}/{t[6]}",
            f"{t[3]} ({t[3] / t[0]:.2f})",
            str(t[4]),
            str(t[5]),
            "",
            "",
        )
    Console(width=220).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--heldout-seeds", default="", help="comma-separated seeds: generated held-out hubs instead")
    args = parser.parse_args()
    if args.heldout_seeds:
        heldout([int(s) for s in args.heldout_seeds.split(",")])
        return
    relevant = _repos(FIXTURE_HUB) - set(NOT_RELEVANT)
    results: dict[str, list[tuple[float, dict[str, str], int, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-relevance-") as tmp_:
        tmp = Path(tmp_)
        os.environ["HF_HOME"] = str(tmp / "hf")
        with local_hub(FIXTURE_HUB)() as url:
            _find(url, tmp / "warmup", FindConfig())  # the server's first scan of the folder
            for r in range(args.repeats):
                for v, (variant, config) in enumerate(VARIANTS.items()):  # alternate: neither gets a warmer server
                    results[variant].append(_find(url, tmp / f"{v}-{r}", config.model_copy(update={"cache": False})))
        probe_ms, probed = _probe_cost(tmp / f"1-{args.repeats - 1}")

    table = Table(
        title=f'find "{DOMAIN}" over the fixture Hub ({len(relevant)} relevant of {len(_repos(FIXTURE_HUB))})'
    )
    for col in (
        "variant",
        "kept",
        "precision",
        "recall",
        "recall of inspected",
        "wall s (median)",
        "CPU s (median)",
        "Hub requests",
        "wrongly kept",
        "missed",
    ):
        table.add_column(col, overflow="fold")
    for variant, runs in results.items():
        statuses = runs[-1][1]  # the heuristic policy is deterministic: every repeat keeps the same set
        assert all(r[1] == statuses for r in runs), f"{variant}: the kept set changed between repeats"
        kept = {repo for repo, status in statuses.items() if status in ("relevant", "planned")}
        s = _scores(kept, relevant, set(statuses))
        table.add_row(
            variant,
            str(len(kept)),
            f"{s['precision']:.3f}",
            f"{s['recall']:.3f}",
            f"{s['recall_seen']:.3f}",
            f"{statistics.median(r[0] for r in runs):.2f}",
            f"{statistics.median(r[3] for r in runs):.2f}",
            str(runs[-1][2]),
            ", ".join(sorted(kept - relevant)) or "-",
            ", ".join(sorted((relevant - kept) & (set(HIDDEN) | set(statuses)))) or "-",
        )
    console = Console(width=200)
    console.print(table)
    console.print(
        f"content probe: median {probe_ms:.2f} ms per candidate over {probed} sampled configs (≤ 8 rows each)"
    )


if __name__ == "__main__":
    main()
