"""CLI: capture, train, export and the draft/serving checks. torch is imported only inside commands."""

from __future__ import annotations

from pathlib import Path

import typer

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.capture.config import SETTABLE as CAPTURE_SETTABLE
from pipeline.capture.config import CaptureConfig
from pipeline.cli.as_json import JSON_OPTION, json_listing
from pipeline.cli.common import (
    CONFIG_OPTION,
    catalog,
    console,
    field_option,
    literal,
    print_table,
    resolve_named,
    settings,
)
from pipeline.stage import stage_settings
from pipeline.train.config import SETTABLE as TRAIN_SETTABLE
from pipeline.train.config import TrainConfig


def _ids(text: str | None) -> list[int] | None:
    try:
        return [int(x) for x in text.split(",")] if text else None
    except ValueError as exc:
        raise DraftsetError(
            f"--layers {text!r} is not a comma-separated list of integers",
            hint="e.g. --layers 2,16,29 (HF hidden-state indices)",
        ) from exc


def capture(
    build: str = typer.Argument(..., help="build name (data/build/<NAME>) or directory"),
    model: Path = typer.Option(..., "--model", help="target model directory (Hugging Face layout)"),
    out: Path | None = typer.Option(None, help="output dir (default: $DRAFTSET_HOME/captures/<NAME>)"),
    layers: str | None = typer.Option(None, help="aux taps as HF hidden-state indices (default: 2,n//2,n-3)"),
    batch_tokens: int | None = field_option(CaptureConfig, "batch_tokens", help="padded tokens per forward pass"),
    max_rows: int | None = field_option(CaptureConfig, "max_rows", help="capture only the first N rows"),
    device: str | None = field_option(CaptureConfig, "device", help="auto | cpu | cuda:N"),
    tp: bool | None = field_option(
        CaptureConfig,
        "tp",
        "--tp",
        help="under torchrun: one target tensor-parallel across the ranks "
        "(transformers tp_plan), for targets larger than one GPU",
    ),
    fresh: bool = typer.Option(False, "--fresh", help="discard what --out already holds instead of resuming it"),
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the target over built rows; store aux taps + verifier state (bf16) and a manifest."""
    from pipeline.capture.run import run_capture

    json_listing(as_json)

    flags = {"layers": _ids(layers), "batch_tokens": batch_tokens, "max_rows": max_rows, "device": device, "tp": tp}
    values = stage_settings(CaptureConfig, config_file, flags, settable=CAPTURE_SETTABLE)
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


def train(
    capture_name: str = typer.Argument(
        ..., metavar="CAPTURE", help="capture name or directory (with --online: a build name or directory)"
    ),
    out: Path | None = typer.Option(None, help="draft dir (default: $DRAFTSET_HOME/drafts/<NAME>)"),
    model: Path | None = typer.Option(
        None,
        help="target dir for embedding/head (default: manifest's); "
        "with --online the target whose forward makes the taps",
    ),
    online: bool | None = field_option(
        TrainConfig,
        "online",
        "--online",
        help="run the target inside the training loop: no hidden-state files (CAPTURE is then a build)",
    ),
    layers: str | None = typer.Option(None, help="--online: aux taps (default: 2,n//2,n-3)"),
    tp: bool | None = field_option(
        TrainConfig,
        "tp",
        "--tp",
        help="--online under torchrun: one target tensor-parallel across the ranks (targets larger than one GPU)",
    ),
    epochs: int | None = field_option(TrainConfig, "epochs", help="passes over the data"),
    lr: float | None = field_option(TrainConfig, "lr", help="learning rate"),
    batch_tokens: int | None = field_option(TrainConfig, "batch_tokens", help="tokens per batch"),
    ttt_steps: int | None = field_option(TrainConfig, "ttt_steps", help="training-time-test steps"),
    max_steps: int | None = field_option(TrainConfig, "max_steps", help="stop after this many steps"),
    max_seconds: float | None = field_option(
        TrainConfig, "max_seconds", help="stop resumably after this many seconds in the loop (--resume goes on)"
    ),
    device: str | None = field_option(TrainConfig, "device", help="auto | cpu | cuda:N"),
    fc_norm: bool | None = field_option(
        TrainConfig, "fc_norm", "--fc-norm", help="EAGLE-3.1: an RMSNorm on each tap before the fusion layer"
    ),
    norm_output: bool | None = field_option(
        TrainConfig, "norm_output", "--norm-output", help="EAGLE-3.1: the post-norm state feeds the next step"
    ),
    save_every: int | None = field_option(
        TrainConfig, "save_every", help="steps between resumable states (and every epoch end)"
    ),
    resume: bool | None = field_option(
        TrainConfig, "resume", "--resume", help="continue an interrupted run from its last state"
    ),
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train an EAGLE-3 draft on a capture (or online), checkpoint it and export it for SGLang/vLLM."""
    import json

    from pipeline.train.loop import run_train

    json_listing(as_json)

    flags = {
        "model_dir": model,
        "online": online,
        "layers": _ids(layers),
        "tp": tp,
        "epochs": epochs,
        "lr": lr,
        "batch_tokens": batch_tokens,
        "ttt_steps": ttt_steps,
        "max_steps": max_steps,
        "max_seconds": max_seconds,
        "device": device,
        "fc_norm": fc_norm,
        "norm_output": norm_output,
        "save_every": save_every,
        "resume": resume,
    }
    values = stage_settings(TrainConfig, config_file, flags, settable=TRAIN_SETTABLE)
    online, model = values["online"], values.get("model_dir")
    if online and model is None:
        raise DraftsetError("--online needs --model TARGET_DIR", hint="draftset train BUILD --online --model DIR")
    source = resolve_named(capture_name, "builds" if online else "captures")
    inputs = {"build_dir": source, "capture_dir": None} if online else {"capture_dir": source}
    out = out or Home(settings().home).draft(source.name)
    ckpt = run_train(TrainConfig(**inputs, out_dir=out, **values), catalog())
    metrics = json.loads((ckpt / "resolved.json").read_text())["metrics"]
    rows = [["train", *[f"{a:.3f}" for a in metrics["train_step_accuracy"]]]]
    if metrics.get("heldout_step_accuracy"):
        rows.append(["held-out", *[f"{a:.3f}" for a in metrics["heldout_step_accuracy"]]])
    records = [{"split": "train", "step_accuracy_fraction": metrics["train_step_accuracy"]}]
    if metrics.get("heldout_step_accuracy"):
        records.append({"split": "held-out", "step_accuracy_fraction": metrics["heldout_step_accuracy"]})
    print_table(
        ["split", *[f"acc@{k}" for k in range(values["ttt_steps"])]],
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
