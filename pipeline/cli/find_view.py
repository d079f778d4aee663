"""What `draftset find` shows: live per-agent progress, the ranked candidates, the plan and its cost."""

from __future__ import annotations

from typing import Any

from rich.live import Live
from rich.table import Table

from agents.categories import BY_KEY
from agents.planning import headline, human_bytes
from pipeline.cli.common import console, literal, print_table

STAGE_STYLE = {"start": "cyan", "search": "cyan", "inspect": "blue", "done": "green", "failed": "red"}


class AgentProgress:
    """A rich Live table with one line per category agent, fed by the graph's stream events."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.live = Live(self._table(), console=console, refresh_per_second=8, transient=False)

    def __enter__(self) -> AgentProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.live.__exit__(*exc)

    def update(self, event: dict[str, Any]) -> None:
        if "category" not in event:
            return
        row = self.rows.setdefault(event["category"], {})
        row.update({k: v for k, v in event.items() if k != "category"})
        self.live.update(self._table())

    def _table(self) -> Table:
        table = Table(title="category agents", header_style="bold")
        for col in ("agent", "stage", "hub calls", "cache hits", "hits", "candidates", "error"):
            table.add_column(col)
        for key, row in sorted(self.rows.items()):
            stage = row.get("stage", "")
            # Errors quote Hub and LLM answers: literal Text, never markup.
            table.add_row(
                BY_KEY[key].title,
                literal(stage, STAGE_STYLE.get(stage, "white")),
                str(row.get("hub_calls", "")),
                str(row.get("cache_hits", "")),
                str(row.get("hits", "")),
                str(row.get("candidates", "")),
                literal(str(row.get("error", ""))[:60]),
            )
        return table


def _top_reasons(reasons: list[str], n: int = 3) -> str:
    positive = sorted(
        (r for r in reasons if r.startswith("+") and not r.startswith("+0.00")), key=lambda r: -float(r.split()[0])
    )
    return "; ".join(r.split(" ", 1)[1] for r in positive[:n])


def show_candidates(candidates: list[dict[str, Any]]) -> None:
    print_table(
        ("#", "repo", "category", "score", "top reasons", "rows", "license / flags", "mode", "status"),
        [
            (
                i + 1,
                c["repo_id"],
                c["category"] + (f" (+{','.join(c['also_found_by'])})" if c["also_found_by"] else ""),
                f"{c['score']:.2f}",
                _top_reasons(c["reasons"]),
                c["n_rows"],
                " ".join([c["license"] or "-"] + c["flags"]),
                c["mode"],
                c["status"],
            )
            for i, c in enumerate(candidates)
        ],
        title="candidates (ranked)",
    )


def show_relevance(candidates: list[dict[str, Any]]) -> None:
    """The candidates whose content overruled their card or is left to a person: off-domain (rows about another
    domain), kept on content (a terse or non-English card), kept on topic (rows about software without its usual
    shapes) and flagged for review (neither), each with the evidence from its sampled rows."""
    shown = ("off_domain", "on_content", "on_topic", "review")
    overruled = [c for c in candidates if (c.get("relevance") or {}).get("verdict") in shown]
    if overruled:
        print_table(
            ("repo", "category", "relevance", "evidence from the sampled rows", "status"),
            [
                (c["repo_id"], c["category"], c["relevance"]["verdict"], c["relevance"]["evidence"], c["status"])
                for c in overruled
            ],
            title="relevance from content (candidate_status.relevance, relevance_evidence)",
        )


def show_plan(plan: dict[str, Any]) -> None:
    items = plan["items"]
    # Columns by importance, since a narrow terminal drops them from the right: what each dataset gives and
    # costs (samples, regeneration hours, hidden-state bytes) right after its id, the breakdown after that.
    print_table(
        ("repo", "samples", "regen h", "hidden", "category", "mode", "rows to take", "prompt tok", "response tok"),
        [
            (
                i["repo_id"],
                f"{i['est_samples']:,}",
                f"{i['regen_hours']:.2f}",
                human_bytes(i["hidden_state_bytes"]),
                i["category"],
                i["mode"],
                f"{i['rows_to_take']:,}",
                f"{i['prompt_tokens']:,}",
                f"{i['response_tokens']:,}",
            )
            for i in items
        ],
        title=f"plan {plan['plan_id']}",
        records=[
            {
                "repo_id": i["repo_id"],
                "samples": i["est_samples"],
                "regen_hours": i["regen_hours"],
                "hidden_state_bytes": i["hidden_state_bytes"],
                "category": i["category"],
                "mode": i["mode"],
                "rows_to_take": i["rows_to_take"],
                "prompt_tokens": i["prompt_tokens"],
                "response_tokens": i["response_tokens"],
            }
            for i in items
        ],
    )  # print_table prints titles literally
    console.print("hidden: hidden-state bytes if captured offline (0 with train --online)", style="dim")
    t = plan["totals"]
    console.print(
        f"[bold]requested[/] {plan['samples_requested']:,} new samples · [bold]already held[/] "
        f"{plan['samples_existing']:,} ({len(plan['existing_repos'])} datasets, not re-proposed) · "
        f"[bold]planned[/] {t['samples_planned']:,} from {t['datasets']} datasets"
        + (f" · [yellow]shortfall {t['shortfall']:,}[/]" if t["shortfall"] else "")
    )
    console.print(
        f"tokens: {t['prompt_tokens']:,} prompt + {t['response_tokens']:,} response · regeneration at "
        f"{t['throughput_tok_s']:g} tok/s · hidden states at {t['bytes_per_token']:,} B/token"
    )
    console.print(f"[bold magenta]{headline(t)}[/]")
    if t.get("forecast"):
        console.print(f"forecast: {t['forecast']}", highlight=False, soft_wrap=True)


def show_review(queries: list[str]) -> None:
    console.print("[bold]review it:[/]")
    for q in queries:
        console.print(literal(f"  {q}"), highlight=False, soft_wrap=True)
