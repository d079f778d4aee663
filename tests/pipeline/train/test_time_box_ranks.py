"""`--max-seconds` under torchrun: the ranks stop on the same step, or the one still training hangs in a collective."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Rank 0 has been running for an hour, rank 1 for no time: both must read "out of time".
CHILD = """
import os, sys, time
import torch, torch.distributed as dist
from pipeline.train.loop import out_of_time

rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method=sys.argv[2], rank=rank, world_size=2)
started = time.perf_counter() - (3600 if rank == 0 else 0)
print(out_of_time(started, 60.0, torch.device("cpu")))
dist.destroy_process_group()
"""


@pytest.mark.timeout(180)
def test_one_rank_out_of_time_stops_every_rank(tmp_path):
    init = f"file://{tmp_path / 'rendezvous'}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(Path.cwd())}
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(r), init], env=env, stdout=subprocess.PIPE, text=True)
        for r in (0, 1)
    ]
    try:
        outs = [p.communicate(timeout=150)[0].split() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0] and outs == [["True"], ["True"]]


def test_alone_it_reads_its_own_clock():
    import time

    import torch

    from pipeline.train.loop import out_of_time

    assert out_of_time(time.perf_counter() - 5, 1.0, torch.device("cpu"))
    assert not out_of_time(time.perf_counter(), 60.0, torch.device("cpu"))
