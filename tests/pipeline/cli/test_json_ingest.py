"""`draftset ingest --json` and `draftset dedup --json` on a fixture-Hub dataset: one JSON document each, the
counts as numbers (dropped ones by reason), and every other line on stderr."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.cli.app import app

REPO = "swesmith-mini/swe-smith-trajectories-mini"


def _json(*args: str) -> dict:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_ingest_and_dedup_list_their_counts_as_json(home, hub_url):
    from adapters.infer.infer import propose_adapter
    from adapters.review import review, store
    from catalog import Catalog

    cat = Catalog(home)
    store.save_spec(cat, propose_adapter(REPO, endpoint=hub_url, viewer_base=hub_url + "/viewer", catalog=cat).spec)
    review.approve(cat, REPO, "tester", note="fixture data, read as proposed", force=True)

    (row, total) = json.loads(CliRunner().invoke(app, ["ingest", "--repo", REPO, "--json"]).stdout)["tables"][0]["rows"]
    assert row["dataset"] == REPO and total["dataset"] == "TOTAL" and row["status"] == "ok"
    assert isinstance(row["rows_in"], int) and row["records_out"] > 0 and isinstance(row["dropped"], dict)
    assert all(isinstance(v, int) for v in row["dropped"].values())  # by reason, numbers (the table: reason=N)

    (dedup,) = _json("dedup", "--json")["tables"][0]["rows"]
    assert dedup["in"] == row["records_out"] and isinstance(dedup["kept"], int) and isinstance(dedup["dropped"], dict)


def test_a_mapping_cell_reads_reason_equals_count():
    from pipeline.cli.common import cell_text

    assert cell_text({"too_large": 1234, "malformed": 1}) == "too_large=1,234, malformed=1" and cell_text({}) == "-"
