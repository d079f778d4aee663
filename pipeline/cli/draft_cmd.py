"""CLI: capture, train, export and the draft/serving checks. torch is imported only inside commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.capture.config import CaptureConfig
from pipeline.cli.as_json import JSON_OPTION, json_listing
from pipeline.cli.common import (
    CONFIG_OPTION,
    catalog,
    console,
    literal,
    print_table,
    resolve_named,
    settings,
)
from pipeline.cli.stage_options import stage_options
from pipeline.stage import stage_settings
from pipeline.train.config import TrainConfig


@stage_options(CaptureConfig)  # every setting CaptureConfig declares, as a flag
def capture(
    build: str = typer.Argument(..., help="build name (data/build/<NAME>) or directory"),
    model: Path = typer.Option(..., "--model", help="target model directory (Hugging Face layout)"),
    out: Path | None = typer.Option(None, help="output dir (default: $DRAFTSET_HOME/captures/<NAME>)"),
    fresh: bool = typer.Option(False, "--fresh", help="discard what --out already holds instead of resuming it"),
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
    flags: dict[str, Any] | None = None,
) -> None:
    """Run the target over built rows; store aux taps + verifier state (bf16) and a manifest."""
    from pipeline.capture.run import run_capture

    json_listing(as_json)

    values = stage_settings(CaptureConfig, config_file, flags or {})
    build_dir = resolve_named(build, "builds")
    out = out or Home(settings().home).capture(build_dir.name)
    m = run_capture(CaptureConfig(build_dir=build_dir, model_dir=model, out_dir=out, **values), catalog(), fresh=fresh)
    print_table(
        ["samples", "tokens", "loss tokens", "taps (HF j)", "SGLang ids", "bytes/token", "GB on disk", "dir"],
        [
            [
                m.n_samples,
                m.n_tokens,
                m.n_loss_tokens,
                m.taps.aux,
                m.taps.sglang_ids,
                m.hidden_bytes_per_token,
                f"{m.file_bytes / 1e9:.3f}",
                out,
            ]
        ],
        title="capture",
        records=[
            {
                "samples": m.n_samples,
                "tokens": m.n_tokens,
                "loss_tokens": m.n_loss_tokens,
                "taps_hf_j": list(m.taps.aux),
                "sglang_ids": m.taps.sglang_ids,
                "hidden_bytes_per_token": m.hidden_bytes_per_token,
                "file_bytes": m.file_bytes,
                "dir": str(out),
            }
        ],
    )


@stage_options(TrainConfig)  # every setting TrainConfig declares, as a flag (pipeline/cli/stage_options.py)
def train(
    capture_name: str = typer.Argument(
        ..., metavar="CAPTURE", help="capture name or directory (with --online: a build name or directory)"
    ),
    out: Path | None = typer.Option(None, help="draft dir (default: $DRAFTSET_HOME/drafts/<NAME>)"),
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
    flags: dict[str, Any] | None = None,
) -> None:
    """Train an EAGLE-3 draft on a capture (or online), checkpoint it and export it for SGLang/vLLM."""
    import json

    from pipeline.train.loop import run_train

    json_listing(as_json)

    values = stage_settings(TrainConfig, config_file, flags or {})
    online, model = values["online"], values.get("model_dir")
    if online and model is None:
        raise DraftsetError("--online needs --model TARGET_DIR", hint="draftset train BUILD --online --model DIR")
    source = resolve_named(capture_name, "builds" if online else "captures")
    inputs = {"build_dir": source, "capture_dir": None} if online else {"capture_dir": source}
    out = out or Home(settings().home).draft(source.name)
    ckpt = run_train(TrainConfig(**inputs, out_dir=out, **values), catalog())
    resolved = json.loads((ckpt / "resolved.json").read_text())
    metrics, ttt_steps = resolved["metrics"], resolved["train"]["ttt_steps"]  # given, or the recipe's
    rows = [["train", *[f"{a:.3f}" for a in metrics["train_step_accuracy"]]]]
    if metrics.get("heldout_step_accuracy"):
        rows.append(["held-out", *[f"{a:.3f}" for a in metrics["heldout_step_accuracy"]]])
    records = [{"split": "train", "step_accuracy_fraction": metrics["train_step_accuracy"]}]
    if metrics.get("heldout_step_accuracy"):
        records.append({"split": "held-out", "step_accuracy_fraction": metrics["heldout_step_accuracy"]})
    print_table(
        ["split", *[f"acc@{k}" for k in range(ttt_steps)]],
        rows,
        title="draft accuracy per step",
        records=records,
    )
    for line in metrics.get("warnings") or []:  # said again after the table, where the user reads
        console.print(literal(f"warning: {line}", style="yellow"))
    if not metrics.get("complete", True):
        console.print(literal("stopped early (max steps/seconds): `draftset train ... --resume` goes on"))
    console.print(f"draft exported to {out}", highlight=False)


def export(
    draft: str = typer.Argument(..., help="draft name/dir (uses its train/checkpoint) or a checkpoint dir"),
    out: Path | None = typer.Option(None, help="export dir (default: the draft dir)"),
) -> None:
    """Export a checkpoint to the SGLang/vLLM layout (config.json, model.safetensors, capture manifest)."""
    from pipeline.train.export import export_draft

    path = resolve_named(draft, "drafts")
    ckpt = path / "train" / "checkpoint" if (path / "train" / "checkpoint").exists() else path
    target = out or (path if ckpt != path else ckpt.parent.parent)
    export_draft(ckpt, target)
    console.print(f"exported {ckpt} → {target}")


def register(app: typer.Typer) -> None:
    app.command("capture")(capture)
    app.command("train")(train)
    app.command("export")(export)
