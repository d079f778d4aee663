"""Training resumes mid-epoch after a real kill, and online training trains on the target's forward."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from catalog.errors import DraftsetError
from pipeline.capture.manifest import CaptureManifest
from pipeline.train.loop import run_train
from tests.kits.draft_toy import PLAIN_FLAGS, plain_config

ARGS = [
    "--epochs",
    "5",
    "--batch-tokens",
    "96",
    "--ttt-steps",
    "2",
    "--lr",
    "2e-3",
    "--log-every",
    "1",
    "--save-every",
    "3",
    "--device",
    "cpu",
]


def _cmd(capture: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pipeline.train", str(capture), str(out), *PLAIN_FLAGS, *ARGS, *extra]


def _env() -> dict:
    path = os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": ""}


def _trained_batches(out: Path) -> list[tuple[int, list[str]]]:
    return [
        (e["step"], e["batch"]) for e in map(json.loads, (out / "train" / "train_log.jsonl").read_text().splitlines())
    ]


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_draft_without_repeating_or_losing_batches(toy, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    done = subprocess.run(_cmd(toy.capture, straight), env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    total = len(_trained_batches(straight))

    proc = subprocess.Popen(_cmd(toy.capture, killed), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log, state = killed / "train" / "train_log.jsonl", killed / "train" / "checkpoint" / "trainer_state.pt"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if state.exists() and log.exists() and len(log.read_text().splitlines()) >= 8:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)  # mid-run, no chance to clean up
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    trained_before = len(log.read_text().splitlines())
    assert 8 <= trained_before < total

    with pytest.raises(subprocess.CalledProcessError):  # other batch settings would train another sequence
        subprocess.run(
            _cmd(toy.capture, killed, "--resume", "--batch-tokens", "200"),
            env=_env(),
            check=True,
            capture_output=True,
            timeout=300,
        )
    resumed = subprocess.run(
        _cmd(toy.capture, killed, "--resume"), env=_env(), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    at = int(resumed.stdout.split("resuming at step ")[1].split()[0])
    assert 0 < at <= trained_before and at % 3 == 0  # from the last saved state, not from scratch

    # every batch trained exactly once, in the uninterrupted run's order
    assert _trained_batches(killed) == _trained_batches(straight)
    a = load_file(str(straight / "train" / "checkpoint" / "draft.safetensors"))
    b = load_file(str(killed / "train" / "checkpoint" / "draft.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # CPU, one thread: deterministic
    stats = json.loads((killed / "train" / "stats.json").read_text())["counts"]
    assert stats["skipped_already_trained"] + stats["out"] + stats["not_trained_here"] == stats["in"]


def test_resume_without_state_is_a_clear_error(toy, tmp_path):
    with pytest.raises(DraftsetError, match="nothing to resume"):
        run_train(plain_config(capture_dir=toy.capture, out_dir=tmp_path / "d", resume=True, device="cpu"))


def test_online_training_uses_the_targets_forward_and_writes_no_hidden_states(toy, tmp_path):
    from pipeline.train.source import OfflineSource, OnlineSource

    offline = OfflineSource(toy.capture)
    online = OnlineSource(toy.build, toy.model, None, torch.device("cpu"), torch.float32)
    ids = offline.ids()[:5]
    a, _ = offline.batch(ids, "cpu", torch.float32)
    b, bad = online.batch(ids, "cpu", torch.float32)
    assert not bad and torch.equal(a.input_ids, b.input_ids) and torch.equal(a.loss_mask, b.loss_mask)
    assert (
        float((a.aux - b.aux).norm() / a.aux.norm()) < 1e-2 and float((a.last - b.last).norm() / a.last.norm()) < 1e-2
    )
    m_off, m_on = offline.manifest, online.manifest
    same = (
        "taps",
        "n_layers",
        "hidden_size",
        "chat_template_sha256",
        "model_revision",
        "n_samples",
        "n_tokens",
        "n_loss_tokens",
        "max_length",
        "draft_vocab_size",
        "hidden_bytes_per_token",
    )
    assert {k: getattr(m_on, k) for k in same} == {k: getattr(m_off, k) for k in same}
    assert m_on.hidden_bytes == m_on.file_bytes == 0

    out = tmp_path / "online"

    def train_online(max_steps: int, resume: bool = False) -> Path:
        return run_train(
            plain_config(
                capture_dir=None,
                build_dir=toy.build,
                model_dir=toy.model,
                online=True,
                out_dir=out,
                epochs=4,
                lr=5e-3,
                batch_tokens=512,
                ttt_steps=2,
                max_steps=max_steps,
                save_every=2,
                device="cpu",
                resume=resume,
            )
        )

    train_online(6)
    assert not list(out.rglob("shard-*")) and CaptureManifest.load(out).taps == m_off.taps
    resumed = train_online(10, resume=True)
    metrics = json.loads((resumed / "resolved.json").read_text())["metrics"]
    assert (
        metrics["steps"] == 10
        and [e["step"] for e in map(json.loads, (out / "train" / "train_log.jsonl").read_text().splitlines())][-1] == 10
    )


def test_a_time_box_stops_resumably_and_says_whether_every_epoch_was_trained(toy, tmp_path):
    def train(max_seconds: float | None, resume: bool) -> dict:
        config = plain_config(
            capture_dir=toy.capture,
            out_dir=tmp_path / "boxed",
            epochs=2,
            batch_tokens=512,
            ttt_steps=2,
            max_seconds=max_seconds,
            save_every=0,
            device="cpu",
            resume=resume,
        )
        return json.loads((run_train(config) / "resolved.json").read_text())["metrics"]

    cut = train(1e-9, resume=False)  # out of time after the first step: its state is saved, the run says so
    assert cut["steps"] == 1 and cut["complete"] is False
    done = train(None, resume=True)
    log = [
        e["step"] for e in map(json.loads, (tmp_path / "boxed" / "train" / "train_log.jsonl").read_text().splitlines())
    ]
    assert done["complete"] is True and done["steps"] > 1 and log == sorted(set(log))  # on from step 1, none twice


def test_a_clock_saves_resumable_state_the_log_has_an_eta_and_a_useless_draft_is_warned(
    toy, tmp_path, capsys, monkeypatch
):
    from pipeline.train import loop

    saved: list[int] = []
    real = loop.save_state
    monkeypatch.setattr(
        loop, "save_state", lambda path, d, o, s, pos, c: (saved.append(pos.step), real(path, d, o, s, pos, c))
    )

    config = plain_config(
        capture_dir=toy.capture,
        out_dir=tmp_path / "clocked",
        epochs=1,
        batch_tokens=96,
        ttt_steps=2,
        max_steps=3,
        save_every=0,  # no step-count saves: only the clock (a tiny interval) saves mid-epoch
        save_every_s=1e-9,
        log_every=1,
        device="cpu",
    )
    metrics = json.loads((run_train(config) / "resolved.json").read_text())["metrics"]
    assert saved[:3] == [1, 2, 3]  # the clock saved after every step (then the end-of-run save)
    log = [json.loads(x) for x in (tmp_path / "clocked" / "train" / "train_log.jsonl").read_text().splitlines()]
    assert all(e["total_steps"] == 3 and e["eta_s"] is not None for e in log) and log[-1]["eta_s"] == 0
    assert ", ETA 0:00:00" in capsys.readouterr().out
    assert metrics["complete"] is False and isinstance(metrics["warnings"], list)
    near_zero = {"heldout_step_accuracy": [0.004, 0.0], "steps": 40, "complete": True}
    (line,) = loop.accuracy_warnings(near_zero)
    assert "held-out accuracy at step 0 is 0.004 after 40 steps" in line and "train longer" in line
    assert loop.accuracy_warnings({"heldout_step_accuracy": [0.31, 0.2], "complete": True}) == []
