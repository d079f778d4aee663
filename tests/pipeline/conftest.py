"""Helpers for the pipeline tests: canonical records written as real normalized shards."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.records import Conversation, Message, Source, record_id
from catalog.home import Home
from catalog.shards import ParquetShardWriter
from pipeline.rows.codec import to_row


def make_conv(
    repo_id: str,
    row_index: int,
    prompt: str,
    answer: str = "An answer.",
    *,
    category: str = "general chat",
    mode: str = "regenerate",
    system: str | None = None,
    follow_up: str | None = None,
) -> Conversation:
    messages = [Message(role="system", content=system)] if system else []
    messages += [Message(role="user", content=prompt), Message(role="assistant", content=answer)]
    if follow_up:
        messages += [Message(role="user", content=follow_up), Message(role="assistant", content=answer)]
    return Conversation(
        id=record_id(repo_id, "default", "train", row_index),
        source=Source(repo_id=repo_id, revision="r" * 40, config="default", split="train", row_index=row_index),
        category=category,
        mode=mode,
        messages=messages,
    )


def write_source(home: Path, convs: list[Conversation], rows_per_shard: int = 10_000) -> Path:
    """Write conversations of one repo as normalized shards, as ingest does."""
    out = Home(home).normalized(convs[0].source.repo_id)
    with ParquetShardWriter(out, rows_per_shard=rows_per_shard) as writer:
        writer.write_many(to_row(c) for c in convs)
    return out


@pytest.fixture()
def sources():
    return make_conv, write_source


GATED_TOKEN = "test-token"  # the local Hub accepts any non-empty token for gated repos


@pytest.fixture(scope="session")
def fixture_home(hub_url, tmp_path_factory):
    """A home where every conversational fixture repo was proposed, contract-tested, approved and
    ingested through the real adapters API against the local Hub (once per session).

    Adapters whose contract fails on purpose (unmapped roles, broken rows) are approved with
    `force` and a note, as a person would, so their bad rows reach the quarantine."""
    from adapters.infer.infer import propose_adapter
    from adapters.review import review, store
    from catalog import Catalog
    from pipeline.ingest.fanout import ingest
    from tests.fixtures.expected import EXPECTED

    home = tmp_path_factory.mktemp("fixture-home")
    cat = Catalog(home)
    repos = sorted(r for r, e in EXPECTED.items() if e.records > 0)
    for repo in repos:
        proposal = propose_adapter(
            repo,
            endpoint=hub_url,
            viewer_base=hub_url + "/viewer",
            token=GATED_TOKEN,
            catalog=cat,
            category=EXPECTED[repo].category,
        )
        store.save_spec(cat, proposal.spec)
        _, contract = review.check_adapter(cat, repo, endpoint=hub_url, token=GATED_TOKEN)
        force = not contract.passed or bool(proposal.spec.needs_review)  # planted bad rows, or a guessed split
        review.approve(cat, repo, "pipeline-tests", note="fixture with planted bad rows", force=force)
    results = ingest(cat, home, repos, endpoint=hub_url, token=GATED_TOKEN)
    return home, {r.repo_id: r for r in results}


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture()
def draftset(monkeypatch, capsys):
    """The real CLI entry point (`main`, as the console script runs it), in process to keep tests fast:
    exit code, stdout and stderr as a user sees them; `env` sets variables for that one call."""
    from pipeline.cli import common
    from pipeline.cli.app import main

    def run(*args: str, env: dict[str, str] | None = None) -> Done:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "argv", ["draftset", *args])
        common.settings.cache_clear()
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out = capsys.readouterr()
        return Done(code, out.out, out.err)

    return run
