"""Ctrl-C during find's proposal phase: what was saved is named, and the one command for the rest is given.

The KeyboardInterrupt is raised by a stand-in for the proposer (labelled: control flow only) after it has
really saved one adapter through the adapters store, as the real one does adapter by adapter.
"""

from __future__ import annotations

import pytest

from adapters import store
from catalog import Catalog
from catalog.errors import DraftsetError
from pipeline.cli import adapters_cmd, common, find_cmd
from tests.kits.adapters import make_spec

PLANNED = ["lab/first", "lab/second", "lab/third"]


def test_ctrl_c_while_proposing_names_what_is_saved_and_what_to_run(home, monkeypatch):
    common.settings.cache_clear()
    cat = Catalog(home)
    with cat.writer() as con:
        for score, repo in zip((0.9, 0.8, 0.7), PLANNED, strict=True):
            con.execute("INSERT INTO candidates (repo_id, score) VALUES (?, ?)", [repo, score])
            con.execute("INSERT INTO plan_items (plan_id, repo_id) VALUES ('plan-x', ?)", [repo])

    def interrupted_after_one(targets: list[str], *args, **kwargs) -> bool:  # stand-in: saves one, then Ctrl-C
        store.save_spec(Catalog(home), make_spec(repo_id=targets[0]))
        raise KeyboardInterrupt

    monkeypatch.setattr(adapters_cmd, "propose_many", interrupted_after_one)
    with pytest.raises(DraftsetError) as err:
        find_cmd._propose_planned("find-x", "plan-x", 3)
    message, hint = str(err.value), str(err.value.hint)
    assert "find find-x and plan plan-x are recorded" in message and "1 of 3 adapter(s)" in message
    assert "lab/first" in message
    assert hint.startswith("draftset adapters propose lab/second lab/third")
