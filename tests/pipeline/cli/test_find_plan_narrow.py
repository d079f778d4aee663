"""find's plan at 80 columns: the cost of each dataset (samples, regeneration hours, hidden-state bytes) stays
beside its id, however long the id; the breakdown columns are the ones left out, and named."""

from __future__ import annotations

from pipeline.cli.consoles import console
from pipeline.cli.find_view import show_plan

LONG_ID = "a-rather-long-organisation/an-even-longer-dataset-name"  # 53 characters


def _plan() -> dict:
    item = {
        "repo_id": LONG_ID,
        "category": "agentic coding",
        "mode": "regenerate",
        "rows_to_take": 12_000,
        "est_samples": 11_500,
        "prompt_tokens": 3_450_000,
        "response_tokens": 9_100_000,
        "regen_hours": 3.04,
        "hidden_state_bytes": 1_058_000_000_000,
    }
    totals = {
        "samples_planned": 11_500,
        "datasets": 1,
        "shortfall": 0,
        "prompt_tokens": 3_450_000,
        "response_tokens": 9_100_000,
        "throughput_tok_s": 830,
        "bytes_per_token": 92_000,
    }
    return {
        "plan_id": "plan-x",
        "items": [item],
        "totals": totals,
        "samples_requested": 10_000,
        "samples_existing": 0,
        "existing_repos": [],
    }


def test_the_plan_keeps_its_cost_columns_at_80_columns(monkeypatch):
    monkeypatch.setattr(console, "width", 80)
    with console.capture() as captured:
        try:
            show_plan(_plan())
        except Exception:  # the lines after the table read more of the plan than this test builds
            pass
    text = captured.get()
    table = text.split("hidden: ")[0]
    owner, name = LONG_ID.split("/")  # the id breaks after its owner, each part whole, so the costs fit beside it
    assert (
        f"│ {owner}/ │" in table
        and f"│ {name} " in table
        and "11,500" in table
        and "3.04" in table
        and "1.1 TB" in table
    ), text
    assert all(len(line) <= 80 for line in table.splitlines()), text
    assert "left out at this width" in text and "prompt tok" in text.split("left out")[1], text
