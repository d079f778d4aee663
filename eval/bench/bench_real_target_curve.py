"""A data-scaling curve on a real target: accept length against training samples, measured.

    python -m eval.bench.bench_real_target_curve --gguf FILE --work DIR --out DIR --prompts 30000 \\
        --sizes 3000,9000,27000 [--epochs 4 ...]

Prompts and greedy answers come from the target as in bench_real_target (batched on the GPU). The
rows are split once by training's own held-out rule (1 in 20 ids by hash), so every size is judged on
the same held-out prompts; sizes are nested subsets of the rest (a fixed shuffle, the first n). For
each size: a build, `train --online` (taps from the target's forward: nothing on disk, so sample counts
are not bounded by the disk), `check draft` (per-step accuracy and the replayed decode, held-out) and
`check accept-length` (chain speculative decoding at each step count; wrong wirings at the largest size).

Every stage is skipped when its output exists, so the same command re-run on a warm machine resumes
where the last call left it. `--budget-s` is what this call may spend: a stage that would not fit is left
for the next call, and training stops resumably at the budget (train's `max_seconds`), so a call
ends on its own inside the device's per-call limit and loses nothing. real_target_curve.json in --out
holds every figure so far; rows.npz (uint16 ids) lets a fresh machine skip generation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import torch

from eval.bench.bench_real_target import magpie_prompts, regenerate_rows, write_build

TRAIN_TAIL_S = 60.0  # outside the loop: loading the target and rows; after it, accuracy, checkpoint, export
CHECK_S = 60.0  # check draft on 16 held-out rows, six wirings, on the CPU


def save_rows(rows: list[dict], path: Path) -> None:
    """Token ids as uint16 (~0.5 KB a sample) plus each row's prompt length: small enough to carry."""
    ids = np.concatenate([np.asarray(r["input_ids"], dtype=np.uint16) for r in rows])
    np.savez_compressed(
        path,
        ids=ids,
        lengths=np.asarray([r["n_tokens"] for r in rows], dtype=np.int32),
        prompt=np.asarray([r["n_tokens"] - r["n_trainable"] for r in rows], dtype=np.int32),
        keys=np.asarray([r["id"] for r in rows]),
    )


def load_rows(path: Path) -> list[dict]:
    z = np.load(path)
    all_ids = z["ids"]  # once: every z[...] of an npz decompresses the whole array again
    rows, at = [], 0
    for key, n, p in zip(z["keys"].tolist(), z["lengths"].tolist(), z["prompt"].tolist()):
        ids = all_ids[at : at + n].astype(np.int64).tolist()
        at += n
        rows.append(
            {
                "id": key,
                "conversation_id": key,
                "input_ids": ids,
                "loss_mask": [0] * p + [1] * (n - p),
                "n_tokens": n,
                "n_trainable": n - p,
            }
        )
    return rows


def nested(rows: list[dict], heldout_every: int) -> tuple[list[dict], list[dict]]:
    """(held-out rows, the rest in a fixed shuffle): size n trains on the first n of the rest."""
    from pipeline.train.data import is_heldout

    held = [r for r in rows if is_heldout(r["id"], heldout_every)]
    rest = sorted((r for r in rows if not is_heldout(r["id"], heldout_every)), key=lambda r: _shuffle_key(r["id"]))
    return held, rest


def _shuffle_key(row_id: str) -> str:
    return hashlib.sha256(f"curve:{row_id}".encode()).hexdigest()


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gguf", type=Path)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rows", type=Path, help="rows.npz from an earlier call (skips generation)")
    p.add_argument("--prompts", type=int, default=30000)
    p.add_argument("--sizes", default="3000,9000,27000")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--answer-tokens", type=int, default=192)
    p.add_argument("--gen-batch", type=int, default=1024)
    p.add_argument("--draft-vocab", type=int, default=16000)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--batch-tokens", type=int, default=32768)
    p.add_argument("--ttt-steps", type=int, default=5)
    p.add_argument("--steps", type=int, nargs="+", default=[3, 5])
    p.add_argument("--eval-prompts", type=int, default=16)
    p.add_argument("--eval-tokens", type=int, default=96)
    p.add_argument(
        "--check-samples",
        type=int,
        default=16,
        help="held-out rows the replay walks (= --eval-prompts: the same prompts)",
    )
    p.add_argument("--stop", default="", help="stop after this stage: gen")
    p.add_argument("--budget-s", type=float, default=None, help="seconds this call may spend (default: no limit)")
    p.add_argument("--save-every", type=int, default=50, help="training steps between resumable states")
    p.add_argument(
        "--wrong-steps",
        type=int,
        nargs="+",
        default=None,
        help="step counts the wrong wirings are decoded at (default: the first of --steps)",
    )
    p.add_argument("--device", default="auto")
    a = p.parse_args(argv)
    started = time.perf_counter()
    from pipeline.capture.runtime import pick_device
    from pipeline.targets.load import load_target

    a.work.mkdir(parents=True, exist_ok=True)
    a.out.mkdir(parents=True, exist_ok=True)
    dev = pick_device(a.device)
    model_dir = a.work / "smollm2"
    results = a.out / "real_target_curve.json"
    state = a.work / "curve.json"
    figures: dict = json.loads(state.read_text()) if state.exists() else {"seconds": {}, "sizes": {}}
    figures["args"] = {k: str(v) for k, v in vars(a).items()}

    def dump() -> None:
        text = json.dumps(figures, indent=2, default=str)
        state.write_text(text)
        results.write_text(text)

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        value = fn()
        # summed over calls: a training resumed in the next call adds its share
        figures["seconds"][name] = round(figures["seconds"].get(name, 0.0) + time.perf_counter() - t0, 1)
        print(f"[{name}] {figures['seconds'][name]} s", flush=True)
        dump()
        return value

    def left() -> float:
        return float("inf") if a.budget_s is None else a.budget_s - (time.perf_counter() - started)

    def fits(stage: str, need: float) -> bool:
        if need <= left():
            return True
        print(f"[budget] {stage} needs ~{need:.0f} s, {left():.0f} s left in this call: the next call does it")
        dump()
        return False

    if not (model_dir / "config.json").exists():
        from pipeline.targets.gguf_import import import_gguf

        timed("import", lambda: import_gguf(a.gguf, model_dir))
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    rows_path = a.work / "rows.npz"
    if a.rows and not rows_path.exists():
        rows_path.write_bytes(a.rows.read_bytes())
    if not rows_path.exists():
        gen = load_target(model_dir, torch.bfloat16 if dev.type == "cuda" else torch.float32).to(dev)
        prompts = timed("prompts", lambda: magpie_prompts(gen, tok, a.prompts, a.gen_batch, a.prompt_tokens, 0))
        rows = timed("regen", lambda: regenerate_rows(gen, tok, prompts, a.gen_batch, a.answer_tokens))
        del gen
        save_rows(rows, rows_path)
        figures["generated"] = {"prompts": len(prompts), "answer_tokens": sum(r["n_trainable"] for r in rows)}
        print("sample answer:", tok.decode(rows[len(rows) // 2]["input_ids"]), flush=True)
        (a.out / "rows.npz").write_bytes(rows_path.read_bytes())  # back to this side: a fresh machine skips gen
    dump()
    if a.stop == "gen":
        return figures
    rows = load_rows(rows_path)
    held, rest = nested(rows, 20)
    sizes = [int(s) for s in a.sizes.split(",")]
    vocab = int(json.loads((model_dir / "config.json").read_text())["vocab_size"])
    wrong_steps = a.wrong_steps or a.steps[:1]
    per_decode = figures.get("per_decode_s", 40.0)  # one decode of the eval prompts; measured after the first
    for n in sizes:
        fig = figures["sizes"].setdefault(str(n), {})
        build, draft = a.work / f"build-{n}", a.work / f"draft-{n}"
        if not (build / "manifest.json").exists():
            fig["build"] = write_build(held + rest[:n], tok, model_dir, build, vocab, a.draft_vocab)
            fig["train_rows"], fig["heldout_rows"] = min(n, len(rest)), len(held)
        if not fig.get("train", {}).get("complete"):
            from pipeline.train.loop import CHECKPOINT, TrainConfig, run_train
            from pipeline.train.resume import STATE

            resume = (draft / "train" / CHECKPOINT / STATE).exists()
            cfg = TrainConfig(
                capture_dir=None,
                build_dir=build,
                model_dir=model_dir,
                online=True,
                out_dir=draft,
                epochs=a.epochs,
                lr=a.lr,
                warmup_steps=a.warmup,
                batch_tokens=a.batch_tokens,
                ttt_steps=a.ttt_steps,
                # the recorded curve is plain EAGLE-3 at a constant lr: given, so train's recipe table keeps it
                schedule="constant",
                fc_norm=False,
                norm_output=False,
                log_every=100,
                device=a.device,
                resume=resume,
                save_every=a.save_every,
                max_seconds=None if a.budget_s is None else left() - TRAIN_TAIL_S,
            )
            if not fits(f"train-{n}", TRAIN_TAIL_S + 30):
                return figures
            ckpt = timed(f"train-{n}", lambda: run_train(cfg))
            fig["train"] = json.loads((ckpt / "resolved.json").read_text())["metrics"]
            dump()
            if not fig["train"]["complete"]:
                print(f"[budget] train-{n} stopped at step {fig['train']['steps']}: the next call resumes it")
                return figures
        if "check" not in fig:
            if not fits(f"check-{n}", CHECK_S):
                return figures
            from eval.checks.draft_check import check_draft

            r = timed(f"check-{n}", lambda: check_draft(draft, build, model_dir, a.check_samples, a.eval_tokens))
            fig["check"] = [
                {
                    "name": w.name,
                    "step_accuracy": w.step_accuracy,
                    "replayed_al": w.accept_length,
                    "interval": [w.interval.low, w.interval.high] if w.interval else None,
                    "replayed_acceptance": w.step_acceptance,
                    "independent_al": w.independent_al,
                    "follows": w.follows,
                    "replayed_by_steps": {k: [i.value, i.low, i.high] for k, i in w.by_steps.items()},
                }
                for w in [r.train, r.heldout]
                if w is not None
            ]
        if "measure" not in fig:
            from eval.specdecode.evaluate import measure

            torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32: output must equal plain greedy
            wrong = n == sizes[-1]
            decodes = 1 + len(a.steps) + (5 * len(wrong_steps) if wrong else 0)  # greedy + one per run
            if not fits(f"measure-{n}", 20 + decodes * per_decode):
                return figures
            ms = timed(
                f"measure-{n}",
                lambda: measure(
                    draft,
                    build,
                    model_dir,
                    a.steps,
                    a.eval_prompts,
                    a.eval_tokens,
                    wrong,
                    a.device,
                    "float32",
                    wrong_steps,
                ),
            )
            per_decode = figures["per_decode_s"] = max(r.seconds for r in ms.runs) * 1.15  # the slowest, and a margin
            fig["measure"] = {
                "greedy_tok_s": ms.greedy_tokens_per_s,
                "n_prompts": ms.n_prompts,
                "runs": [
                    {
                        "wiring": r.name,
                        "hf_ids": r.hf_ids,
                        "steps": r.steps,
                        "al": r.accept_length,
                        "interval": [r.interval.low, r.interval.high],
                        "acceptance": r.step_acceptance,
                        "tok_s": r.tokens_per_s,
                        "tokens": r.n_tokens,
                        "ties": r.ties,
                        "accepted": r.accepted,
                    }
                    for r in ms.runs
                ],
                "separations": ms.separations(),
            }
            for r in ms.runs:
                print(f"n={n} {r.name:28s} steps {r.steps} AL {r.interval} acc {r.step_acceptance}", flush=True)
        dump()
    return figures


if __name__ == "__main__":
    main()
