"""One toy pipeline per session (target → build → capture → train → export), shared by the draft tests.

DRAFTSET_TEST_DEVICE=cuda runs capture and training on the GPU (the CUDA path of these tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from draft_toy import DEVICE, make_build, make_target


@dataclass
class Toy:
    root: Path
    model: Path
    build: Path
    capture: Path
    draft: Path


@pytest.fixture(scope="session")
def toy(tmp_path_factory):
    from pipeline.capture.run import CaptureConfig, run_capture
    from pipeline.train.loop import TrainConfig, run_train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CI has 2 shared cores: one thread avoids spin-wait contention (restored after)
    root = tmp_path_factory.mktemp("toy")
    model, build = make_target(root / "model"), make_build(root / "build")
    run_capture(CaptureConfig(build_dir=build, model_dir=model, out_dir=root / "capture", device=DEVICE))
    run_train(
        TrainConfig(
            capture_dir=root / "capture",
            out_dir=root / "draft",
            epochs=25,
            lr=5e-3,
            batch_tokens=512,
            ttt_steps=3,
            log_every=1000,
            device=DEVICE,
        )
    )
    yield Toy(root, model, build, root / "capture", root / "draft")
    torch.set_num_threads(threads)
