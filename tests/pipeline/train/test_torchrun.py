"""Multi-process path: capture shards by rank and DDP training under torchrun (2 CPU ranks, gloo)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.capture.manifest import CaptureManifest
from pipeline.capture.store import CaptureReader


def _torchrun(*args: str) -> None:
    path = os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": ""}  # gloo on CPU
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_capture_shards_by_rank_and_ddp_training(toy, tmp_path):
    cap, draft = tmp_path / "cap", tmp_path / "draft"
    _torchrun("-m", "pipeline.capture", str(toy.build), str(toy.model), str(cap), "--max-rows", "16")
    assert {p.name.split("-")[1] for p in cap.glob("shard-*.safetensors")} == {"r000", "r001"}
    per_rank = [json.loads((cap / f"rank{r}" / "stats.json").read_text())["counts"]["out"] for r in (0, 1)]
    manifest = CaptureManifest.load(cap)
    assert per_rank == [8, 8] and manifest.n_samples == len(CaptureReader(cap).ids()) == 16
    _torchrun(
        "-m",
        "pipeline.train",
        str(cap),
        str(draft),
        "--epochs",
        "1",
        "--batch-tokens",
        "128",
        "--ttt-steps",
        "2",
        "--lr",
        "1e-3",
    )
    assert (draft / "model.safetensors").exists() and (draft / "train" / "rank1" / "stats.json").exists()
    assert json.loads((draft / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == manifest.taps.aux
