"""`draftset report MIX`: plots plus a markdown and an HTML page under reports/<MIX>/, and report.json: the
same summary and tables as data, which the service's report page renders with its own escaping templates.

The HTML escapes every value: repo ids and categories come from the Hub and are untrusted text.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from catalog.home import Home
from catalog.io import atomic_path, write_json_atomic
from eval.report.data import DEDUP_REASONS, ReportData, load_report_data, percentile
from eval.report.plots import plot_counts, plot_dedup_yield, plot_lengths, plot_targets
from pipeline.cli.common import cell_text


@dataclass
class Report:
    folder: Path
    markdown: Path
    html: Path
    plots: list[Path]
    data: Path | None = None  # report.json


REPORT_JSON = "report.json"


def _tables(data: ReportData) -> list[tuple[str, list[str], list[list[object]]]]:
    sources = data.manifest.get("sources", {})
    figures = {f.source: f for f in data.figures.sources}
    src_rows: list[list[object]] = []
    for repo in sorted(set(sources) | set(data.dedup)):
        entry = sources.get(repo, {})
        dd: dict[str, int] = data.dedup.get(repo, {})
        y = data.yield_of(repo)
        f = figures.get(repo)
        src_rows.append(
            [
                repo,
                entry.get("category", ""),
                entry.get("ingested", sum(dd.values())),
                *[dd.get(r, 0) for r in DEDUP_REASONS],
                "-" if f is None or f.quota is None else f.quota,
                "-" if f is None else f.target,
                data.by_source.get(repo, 0),
                "-" if f is None or not f.short else f.short,
                "-" if f is None or not f.received else f.received,
                "n/a" if y is None else f"{y:.2f}",
            ]
        )
    cats = data.manifest.get("categories", {})
    cat_rows: list[list[object]] = [
        [c, f"{cats.get(c, {}).get('weight', 0):g}", target, cats.get(c, {}).get("room", "-"), selected]
        for c, (target, selected) in data.figures.by_category().items()
    ]
    regen = data.by_mode.get("regenerate", 0)
    lengths: list[list[object]] = [
        [name, len(vals), percentile(vals, 0.5), percentile(vals, 0.9), max(vals) if vals else "-"]
        for name, vals in (
            ("prompt", data.prompt_tokens),
            (f"response (kept answers; {regen:,} to regenerate)", data.response_tokens),
        )
    ]
    source_header = ["source", "category", "ingested", *DEDUP_REASONS, "quota", "target", "in mix", "short"]
    return [
        (
            "Sources (target: its share of N, the quota scaled to N with a plan)",
            [*source_header, "received", "ingest yield"],
            src_rows,
        ),
        ("Categories", ["category", "weight", "target", "available", "in mix"], cat_rows),
        ("Modes", ["mode", "records"], [[m, n] for m, n in sorted(data.by_mode.items())]),
        (f"Lengths ({data.length_unit})", ["side", "records", "p50", "p90", "max"], lengths),
        data.scale_table(),
    ]


def _counts(counts: dict[str, int]) -> str:
    """A stage's counts as "in 1,234 · out 1,200 · exact 30", never a raw dict."""
    return " · ".join(f"{k} {cell_text(v)}" for k, v in counts.items()) or "no counts"


def _summary(data: ReportData) -> list[str]:
    m = data.manifest
    return [
        f"mix `{data.name}`: {data.n_rows:,} records, plan {m.get('plan_id') or 'none'}, seed {m.get('seed')}",
        data.figures.summary(),
        f"dedup run {m.get('dedup_run_id')}: {_counts(m.get('dedup_counts', {}))}",
        f"modes: {_counts(dict(sorted(data.by_mode.items())))}",
        f"lengths measured with {data.length_unit}" + (f" ({data.length_note})" if data.length_note else ""),
        _limits_line(data),
    ]


def _limits_line(data: ReportData) -> str:
    """How many rows hit the mix's length limits, and in which unit they were measured: a wrong tokenizer
    (or one that clips) shows up here as a pile of rows at one limit, or as two different units."""
    hits, cfg = data.limit_hits(), data.dedup_config
    unit = cfg.get("length_unit", "unknown unit")
    return (
        f"length limits ({unit}): {hits['too_long']:,} rows over max_prompt_tokens={cfg.get('max_prompt_tokens', '?')}, "
        f"{hits['too_short']:,} under min_prompt_tokens={cfg.get('min_prompt_tokens', '?')} (dropped by dedup)"
    )


def render_markdown(data: ReportData, plots: list[Path]) -> str:
    lines = [f"# Dataset report: {data.name}", ""] + [f"- {s}" for s in _summary(data)] + [""]
    for title, header, rows in _tables(data):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell_text(v) for v in row) + " |" for row in rows] + [""]
    lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    return "\n".join(lines)


def render_html(data: ReportData, plots: list[Path]) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Dataset report: {e(data.name)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;"
        "margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
        "th{background:#f3f3f3}img{max-width:100%;margin:1em 0}</style></head><body>",
        f"<h1>Dataset report: {e(data.name)}</h1><ul>",
    ]
    parts += [f"<li>{e(s)}</li>" for s in _summary(data)] + ["</ul>"]
    for title, header, rows in _tables(data):
        parts.append(f"<h2>{e(title)}</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(cell_text(v))}</td>" for v in row) + "</tr>" for row in rows]
        parts.append("</table>")
    parts += ["<h2>Plots</h2>"] + [f"<img src='{e(p.name)}' alt='{e(p.stem)}'>" for p in plots]
    parts.append("</body></html>")
    return "\n".join(parts)


def render_json(data: ReportData, plots: list[Path]) -> dict[str, object]:
    """The report as data: each line and cell as the text the other two pages show, plots by file name."""
    return {
        "name": data.name,
        "summary": _summary(data),
        "tables": [
            {"title": title, "columns": header, "rows": [[cell_text(v) for v in row] for row in rows]}
            for title, header, rows in _tables(data)
        ],
        "plots": [{"file": p.name, "title": p.stem} for p in plots],
    }


def write_report(home: Path, mix_name: str, tokenizer: Path | None = None) -> Report:
    data = load_report_data(home, mix_name, tokenizer)
    folder = Home(home).report(mix_name)
    folder.mkdir(parents=True, exist_ok=True)
    plots = (
        plot_targets(data, folder)
        + plot_counts(data, folder)
        + plot_lengths(data, folder)
        + plot_dedup_yield(data, folder)
    )
    md, page = folder / "report.md", folder / "report.html"
    for path, text in ((md, render_markdown(data, plots)), (page, render_html(data, plots))):
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    write_json_atomic(folder / REPORT_JSON, render_json(data, plots))
    return Report(folder, md, page, plots, folder / REPORT_JSON)
