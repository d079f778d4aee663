"""Tensor-parallel capture (transformers tp_plan="auto" under torchrun) stores the same taps as one process.

The target is a random DeepSeek-V3-shaped model (MLA attention, shared + routed experts, a dense first
layer), the architecture of Kimi-K2.5. On CPU the two ranks talk over gloo; the forward runs in fp32,
where sharded sums agree with the unsharded ones to rounding (random routers sit near ties, so bf16
could flip expert choices; see shared/reference/measured-facts.md).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipeline.capture.manifest import CaptureManifest
from pipeline.capture.store import CaptureReader
from tests.kits.draft_toy import DSV3_VOCAB as VOCAB
from tests.kits.draft_toy import make_build, make_dsv3


@pytest.fixture(scope="module")
def dsv3(tmp_path_factory):
    root = tmp_path_factory.mktemp("dsv3")
    return make_dsv3(root / "model"), make_build(root / "build", n_rows=12, vocab_size=VOCAB)


def _run(*args: str, ranks: int, module: str = "pipeline.capture") -> str:
    path = os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": ""}
    launcher = ["-m", "torch.distributed.run", "--nproc_per_node", str(ranks)] if ranks > 1 else []
    done = subprocess.run(
        [sys.executable, *launcher, "-m", module, *args], env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.slow
def test_tensor_parallel_capture_equals_single_process(dsv3, tmp_path):
    model, build = dsv3
    common = [str(build), str(model)]
    _run(*common, str(tmp_path / "one"), "--dtype", "float32", ranks=1)
    out = _run(*common, str(tmp_path / "tp"), "--dtype", "float32", "--tp", ranks=2)
    assert "target tensor-parallel over 2 ranks" in out  # sharded by transformers, not replicated
    one, tp = CaptureReader(tmp_path / "one"), CaptureReader(tmp_path / "tp")
    assert one.ids() == tp.ids() and len(one.ids()) == 12
    assert {p.name.split("-")[1] for p in (tmp_path / "tp").glob("shard-*")} == {"r000"}  # one copy, by rank 0
    m = CaptureManifest.load(tmp_path / "tp")
    assert m.model_type == "deepseek_v3" and m.taps == CaptureManifest.load(tmp_path / "one").taps
    H = m.hidden_size
    worst = [0.0] * (len(m.taps.aux) + 1)
    for sample_id in one.ids():
        a, b = one.load(sample_id), tp.load(sample_id)
        assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["loss_mask"], b["loss_mask"])
        pieces = [(a["aux"][:, k * H : (k + 1) * H], b["aux"][:, k * H : (k + 1) * H]) for k in range(len(m.taps.aux))]
        for k, (x, y) in enumerate(pieces + [(a["last"], b["last"])]):  # per tap: MoE layers included
            worst[k] = max(worst[k], float((x.float() - y.float()).norm() / x.float().norm()))
    assert max(worst) < 2e-3, worst  # bf16 storage of fp32-equal states
    stats = json.loads((tmp_path / "tp" / "stats.json").read_text())["counts"]
    assert stats["in"] == stats["out"] == 12


@pytest.mark.slow
def test_online_training_with_a_tensor_parallel_target(dsv3, tmp_path):
    """`train --online --tp`: the target spans the ranks; the draft, the MLA one this DeepSeek-V3 target gets by
    default, trains on its taps with the losses of one process."""
    model, build = dsv3
    args = [
        "--online",
        "--model",
        str(model),
        "--epochs",
        "1",
        "--batch-tokens",
        "128",
        "--ttt-steps",
        "2",
        "--log-every",
        "1",
        "--max-steps",
        "3",
        "--device",
        "cpu",
    ]
    _run(str(build), str(tmp_path / "one"), *args, ranks=1, module="pipeline.train")
    out = _run(str(build), str(tmp_path / "tp"), *args, "--tp", ranks=2, module="pipeline.train")
    assert "online: target tensor-parallel over 2 ranks" in out
    logs = [
        [json.loads(line) for line in (tmp_path / d / "train" / "train_log.jsonl").read_text().splitlines()]
        for d in ("one", "tp")
    ]
    assert [e["batch"] for e in logs[0]] == [e["batch"] for e in logs[1]] and len(logs[0]) == 3
    for a, b in zip(*logs):
        assert abs(a["loss"] - b["loss"]) <= 2e-3 * abs(a["loss"])  # same taps, same draft steps
    cfg = json.loads((tmp_path / "tp" / "config.json").read_text())
    assert cfg["draftset"]["n_target_layers"] == 8 and cfg["architectures"] == ["Eagle3DeepseekV2ForCausalLM"]
    assert CaptureManifest.load(tmp_path / "tp").model_type == "deepseek_v3"
    assert not list((tmp_path / "tp").rglob("shard-*"))  # no hidden states written
