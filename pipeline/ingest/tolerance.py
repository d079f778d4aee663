"""A dataset's bad-row threshold at ingest: past its spec's `max_bad_fraction`, the dataset fails.

The contract judges a sample; ingest meets every row. A record failing a per-record check
(adapters/prove/plausibility.py) is quarantined and counted as `dropped_check_<name>`, one per raw row. When such
rows are more than the spec tolerates (`adapters.prove.contract.bad_fraction`: 1% unless the spec says) of the rows
this run mapped, the stage fails for that dataset. The check runs after the shard writer closed, so what was
written stays (atomic shards, resumable by id), and `held_back.json` in the dataset's folder says why: mix
leaves a held-back dataset out, by name, until a later ingest of it passes. Two ways out, both a person's:
fix the adapter (a new spec: re-ingest with --fresh), or raise `max_bad_fraction` in the spec with a reason
and approve it again (the records do not change, so ingest resumes: `AdapterSpec.records_hash`).

The fraction is over the raw rows this run mapped (the rows a sample or a top-up took), the same measure as
the contract's (rows with a flagged record / rows read); rows the adapter rejects outright (`row_error`,
`malformed`) are not in it: they are the adapter's verdict on a row, not a plausibility doubt about it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.prove.contract import bad_fraction
from adapters.spec import AdapterSpec
from catalog.errors import StageFailed
from catalog.home import Home
from catalog.io import write_json_atomic
from catalog.shards import existing_ids
from catalog.untrusted import command

HELD_BACK = "held_back.json"
CHECK_DROP = "dropped_check_"
TOP_CHECKS = 3  # check names the one line lists (the rest are counted in stats.json)


class OverThreshold(StageFailed):
    """More rows of a dataset failed a per-record check than its spec tolerates."""


def check_drops(counts: Mapping[str, int]) -> dict[str, int]:
    """check name → rows quarantined by it, most first."""
    found = {k.removeprefix(CHECK_DROP): v for k, v in counts.items() if k.startswith(CHECK_DROP) and v}
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


def enforce(spec: AdapterSpec, counts: Mapping[str, int], mapped: int, folder: Path, run_id: str) -> None:
    """Raise `OverThreshold` (and mark the folder held back) when check drops pass the spec's threshold;
    otherwise clear an earlier run's mark. `mapped`: raw rows this run took (parsed and mapped)."""
    marker = folder / HELD_BACK
    checks = check_drops(counts)
    bad, tolerance = sum(checks.values()), bad_fraction(spec)
    if bad <= tolerance * mapped:
        marker.unlink(missing_ok=True)
        return
    repo = spec.source.repo_id
    quarantine = folder / "quarantine.jsonl"
    top = ", ".join(f"{name} {n:,}" for name, n in list(checks.items())[:TOP_CHECKS])
    more = f" (+{len(checks) - TOP_CHECKS} more)" if len(checks) > TOP_CHECKS else ""
    line = (
        f"ingest of {repo}: {bad:,} of {mapped:,} rows ({bad / mapped:.1%}) failed a per-record check, over its "
        f"max_bad_fraction of {tolerance:.1%} ({top}{more}); quarantine: {quarantine}"
    )
    edit, ingest = command("draftset", "adapters", "edit", repo), command("draftset", "ingest", "--repo", repo)
    hint = (  # each command closed by a backtick: the next words are prose, not arguments
        f"fix the adapter: `{edit}`, then `{ingest} --fresh`; or accept these losses: raise max_bad_fraction in its "
        f"spec with the reason under `reasons:` (`{edit}`), approve it again and run `{ingest}` (resumes by id). Its "
        f"{len(existing_ids(folder)):,} records written are kept, and held back from mix until then"
    )
    write_json_atomic(
        marker,
        {
            "repo_id": repo,
            "run_id": run_id,
            "spec_hash": spec.spec_hash(),
            "rows": mapped,
            "bad_rows": bad,
            "fraction": bad / mapped,
            "max_bad_fraction": tolerance,
            "checks": checks,
            "quarantine": str(quarantine),
            "error": line,
        },
    )
    raise OverThreshold(line, stage="ingest", run_id=run_id, counts=counts, hint=hint)


def held_back(home: Path) -> dict[str, dict[str, Any]]:
    """Ingested datasets whose last threshold check failed: repo → what `held_back.json` recorded."""
    out: dict[str, dict[str, Any]] = {}
    for repo in Home(home).normalized_repos():
        marker = Home(home).normalized(repo) / HELD_BACK
        if marker.is_file():
            try:
                out[repo] = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # unreadable: still held back, never mixed on a guess
                out[repo] = {"error": f"{marker} is unreadable; re-run {command('draftset', 'ingest', '--repo', repo)}"}
    return out
