"""CLI: capture, train, export and the draft/serving checks. torch is imported only inside commands."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.cli.common import catalog, console, print_table, settings

check_app = typer.Typer(help="Check a trained draft, an SGLang serving command, or the expected speedup.",
                        no_args_is_help=True)


def _resolve(name_or_path: str, kind: str) -> Path:
    """A path as given, else a name under $DRAFTSET_HOME/<kind>/."""
    path = Path(name_or_path)
    if path.exists():
        return path
    home = Home(settings().home)
    root = home.build(name_or_path).parent if kind == "data/build" else home.kind_root(kind)
    under = root / name_or_path
    if under.exists():
        return under
    raise DraftsetError(f"{name_or_path!r} is neither a directory nor a name under {root}",
                        hint=f"list them with: ls {root}")


def _ids(text: Optional[str]) -> Optional[list[int]]:
    try:
        return [int(x) for x in text.split(",")] if text else None
    except ValueError as exc:
        raise DraftsetError(f"--layers {text!r} is not a comma-separated list of integers",
                            hint="e.g. --layers 2,16,29 (HF hidden-state indices)") from exc


def capture(build: str = typer.Argument(..., help="build name (data/build/<NAME>) or directory"),
            model: Path = typer.Option(..., "--model", help="target model directory (Hugging Face layout)"),
            out: Optional[Path] = typer.Option(None, help="output dir (default: $DRAFTSET_HOME/captures/<NAME>)"),
            layers: Optional[str] = typer.Option(None, help="aux taps as HF hidden-state indices (default: 2,n//2,n-3)"),
            batch_tokens: int = typer.Option(16384, help="padded tokens per forward pass"),
            max_rows: Optional[int] = typer.Option(None, help="capture only the first N rows"),
            device: str = typer.Option("auto", help="auto | cpu | cuda:N"),
            tp: bool = typer.Option(False, "--tp", help="under torchrun: one target tensor-parallel across the ranks "
                                                         "(transformers tp_plan), for targets larger than one GPU")) -> None:
    """Run the target over built rows; store aux taps + verifier state (bf16) and a manifest."""
    from pipeline.capture.run import CaptureConfig, run_capture

    build_dir = _resolve(build, "data/build")
    out = out or Home(settings().home).capture(build_dir.name)
    m = run_capture(CaptureConfig(build_dir=build_dir, model_dir=model, out_dir=out, layers=_ids(layers),
                                  batch_tokens=batch_tokens, max_rows=max_rows, device=device, tp=tp), catalog())
    print_table(["samples", "tokens", "loss tokens", "taps (HF j)", "SGLang ids", "bytes/token", "GB on disk", "dir"],
                [[m.n_samples, m.n_tokens, m.n_loss_tokens, m.taps.aux, m.taps.sglang_ids, m.hidden_bytes_per_token,
                  f"{m.file_bytes / 1e9:.3f}", out]], title="capture")


def train(capture_name: str = typer.Argument(..., metavar="CAPTURE", help="capture name or directory (with --online: "
                                                                         "a build name or directory)"),
          out: Optional[Path] = typer.Option(None, help="draft dir (default: $DRAFTSET_HOME/drafts/<NAME>)"),
          model: Optional[Path] = typer.Option(None, help="target dir for embedding/head (default: manifest's); "
                                                          "with --online the target whose forward makes the taps"),
          online: bool = typer.Option(False, "--online", help="run the target inside the training loop: no "
                                                              "hidden-state files (CAPTURE is then a build)"),
          layers: Optional[str] = typer.Option(None, help="--online: aux taps (default: 2,n//2,n-3)"),
          tp: bool = typer.Option(False, "--tp", help="--online under torchrun: one target tensor-parallel across "
                                                       "the ranks (targets larger than one GPU)"),
          epochs: int = typer.Option(1), lr: float = typer.Option(1e-4), batch_tokens: int = typer.Option(8192),
          ttt_steps: int = typer.Option(7, help="training-time-test steps"),
          max_steps: Optional[int] = typer.Option(None), device: str = typer.Option("auto"),
          save_every: int = typer.Option(500, help="steps between resumable states (and every epoch end)"),
          resume: bool = typer.Option(False, "--resume", help="continue an interrupted run from its last state")) -> None:
    """Train an EAGLE-3 draft on a capture (or online), checkpoint it and export it for SGLang/vLLM."""
    import json

    from pipeline.train.loop import TrainConfig, run_train

    if online and model is None:
        raise DraftsetError("--online needs --model TARGET_DIR", hint="draftset train BUILD --online --model DIR")
    source = _resolve(capture_name, "data/build" if online else "captures")
    inputs = {"build_dir": source, "capture_dir": None} if online else {"capture_dir": source}
    out = out or Home(settings().home).draft(source.name)
    ckpt = run_train(TrainConfig(**inputs, out_dir=out, model_dir=model, epochs=epochs, lr=lr, online=online,
                                 layers=_ids(layers), batch_tokens=batch_tokens, ttt_steps=ttt_steps,
                                 max_steps=max_steps, device=device, save_every=save_every, resume=resume,
                                 tp=tp),
                     catalog())
    metrics = json.loads((ckpt / "resolved.json").read_text())["metrics"]
    rows = [["train", *[f"{a:.3f}" for a in metrics["train_step_accuracy"]]]]
    if metrics.get("heldout_step_accuracy"):
        rows.append(["held-out", *[f"{a:.3f}" for a in metrics["heldout_step_accuracy"]]])
    print_table(["split", *[f"acc@{k}" for k in range(ttt_steps)]], rows, title="draft accuracy per step")
    console.print(f"draft exported to {out}", highlight=False)


def export(draft: str = typer.Argument(..., help="draft name/dir (uses its train/checkpoint) or a checkpoint dir"),
           out: Optional[Path] = typer.Option(None, help="export dir (default: the draft dir)")) -> None:
    """Export a checkpoint to the SGLang/vLLM layout (config.json, model.safetensors, capture manifest)."""
    from pipeline.train.export import export_draft

    path = _resolve(draft, "drafts")
    ckpt = path / "train" / "checkpoint" if (path / "train" / "checkpoint").exists() else path
    target = out or (path if ckpt != path else ckpt.parent.parent)
    export_draft(ckpt, target)
    console.print(f"exported {ckpt} → {target}")


@check_app.command("draft")
def check_draft_cmd(draft: str = typer.Argument(..., help="exported draft name or directory"),
                    captures: str = typer.Option(..., help="capture name or dir (training and held-out samples)"),
                    model: Optional[Path] = typer.Option(None, help="target dir (default: the manifest's)"),
                    max_samples: int = typer.Option(64)) -> None:
    """Per-step accuracy, expected accept length, and the same under wrong wirings."""
    from eval.checks.draft_check import check_draft

    r = check_draft(_resolve(draft, "drafts"), _resolve(captures, "captures"), model, max_samples)
    rows = [[w.name, w.hf_ids, " ".join(f"{a:.3f}" for a in w.step_accuracy), f"{w.accept_length:.3f}"]
            for w in [r.train, r.heldout, *r.wirings] if w is not None]
    print_table(["wiring", "HF taps", "accuracy per step", "expected AL"], rows, title="check draft")
    console.print(r.verdict())
    if r.configured_is_best is False:
        raise typer.Exit(1)


@check_app.command("serve")
def check_serve_cmd(draft: str = typer.Argument(..., help="exported draft name or directory"),
                    command: list[str] = typer.Argument(..., help="-- python -m sglang.launch_server ..."),
                    system_prompt: Optional[str] = typer.Option(None, help="system prompt clients will send"),
                    thinking: Optional[bool] = typer.Option(None, "--thinking/--no-thinking",
                                                            help="thinking mode clients will request")) -> None:
    """Lint an SGLang launch command against the draft and its manifest; exit 1 on any finding."""
    from eval.checks.serve_check import check_serve

    r = check_serve(_resolve(draft, "drafts"), command, system_prompt, thinking)
    if r.clean:
        console.print("[green]clean:[/] the command matches the draft's training configuration")
        return
    print_table(["flag", "problem", "why it matters", "fix"], [[f.flag, f.problem, f.why, f.fix] for f in r.findings],
                title=f"{len(r.findings)} finding(s)")
    console.print("corrected command:\n" + r.corrected(), highlight=False, soft_wrap=True)
    raise typer.Exit(1)


@check_app.command("estimate")
def check_estimate_cmd(accept_length: list[float] = typer.Option(..., help="accept length(s) to evaluate"),
                       steps: int = typer.Option(3), draft_cost: float = typer.Option(
                           0.05, help="one draft step, in target decode steps"),
                       verify_cost: float = typer.Option(1.1, help="one verify pass, in target decode steps"),
                       baseline_tps: Optional[float] = typer.Option(None, help="calibrate: plain decoding tok/s"),
                       observed_tps: Optional[float] = typer.Option(None, help="calibrate: speculative tok/s"),
                       observed_accept_length: Optional[float] = typer.Option(None)) -> None:
    """Expected speedup from accept length and draft/verify cost (or calibrated from a measured run)."""
    from eval.checks.estimate import calibrated_round_cost, estimate, round_cost

    calib = (baseline_tps, observed_tps, observed_accept_length)
    calibrated = any(v is not None for v in calib)
    if calibrated and None in calib:
        raise DraftsetError("calibration needs all of --baseline-tps, --observed-tps, --observed-accept-length",
                            hint="e.g. --baseline-tps 90 --observed-tps 82.3 --observed-accept-length 2.1")
    cost = calibrated_round_cost(*calib) if calibrated else round_cost(steps, draft_cost, verify_cost)
    rows = [[f"{e.accept_length:.2f}", f"{e.speedup:.3f}x",
             f"{baseline_tps * e.speedup:.1f}" if calibrated else "", "faster" if e.speedup > 1 else "SLOWER"]
            for e in estimate(accept_length, cost)]
    print_table(["accept length", "speedup", "tok/s", "vs plain"], rows, title=f"round cost {cost:.3f} target steps")
    console.print(f"break-even accept length: {cost:.2f}")


def register(app: typer.Typer) -> None:
    app.command("capture")(capture)
    app.command("train")(train)
    app.command("export")(export)
    app.add_typer(check_app, name="check")
