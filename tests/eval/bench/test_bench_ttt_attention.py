"""The TTT attention bench: one command, eager as the baseline in the same run, every row's fields in its JSON, a
failing kernel recorded (and the exit code 1), and nothing but torch and this repo imported (a bare GPU image)."""

import json
import subprocess
import sys

from eval.bench import bench_ttt_attention as bench
from pipeline.train import ttt_attention as kernels


def test_the_bench_times_every_kernel_against_eager_and_writes_its_rows(tmp_path):
    out = tmp_path / "rows.json"
    args = ["--device", "cpu", "--shape", "1,2,20,8,8,3", "--shape", "1,2,20,12,8,2", "--repeats", "1"]
    assert bench.main([*args, "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["device"] == "cpu" and record["dtype"] == "torch.float32" and record["repeats"] == 1
    rows = record["rows"]
    assert [(r["L"], r["d_qk"], r["d_v"], r["steps"], r["kernel"]) for r in rows] == [
        (20, 8, 8, 3, "eager"),
        (20, 8, 8, 3, "sdpa"),
        (20, 8, 8, 3, "flex"),
        (20, 12, 8, 2, "eager"),
        (20, 12, 8, 2, "sdpa"),
        (20, 12, 8, 2, "flex"),
    ]
    for r in rows:
        if r["kernel"] == "flex":  # no flex backward on CPU: said, not timed
            assert r["skipped"] == bench.NO_FLEX_BACKWARD and "median_ms" not in r
            continue
        assert r["median_ms"] > 0 and r["peak_MiB"] is None  # peak memory is CUDA's figure
        assert r["speedup_vs_eager"] > 0
        assert r["max_abs_diff_vs_eager"] < 1e-4  # the kernel computed eager's outputs and gradients
    assert all(r["speedup_vs_eager"] == 1.0 for r in rows if r["kernel"] == "eager")


def test_a_failing_kernel_is_a_row_and_the_exit_code(tmp_path, monkeypatch):
    def broken(*args):
        raise RuntimeError("no kernel today\nsecond line")

    monkeypatch.setitem(kernels.KERNELS, "sdpa", broken)
    out = tmp_path / "rows.json"
    assert bench.main(["--device", "cpu", "--shape", "1,1,8,4,4,2", "--repeats", "1", "--json", str(out)]) == 1
    rows = {r["kernel"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["sdpa"]["error"] == "RuntimeError: no kernel today" and "median_ms" in rows["eager"]


def test_the_bench_imports_torch_and_this_repo_only():
    code = (
        "import sys, eval.bench.bench_ttt_attention\n"
        "heavy = {'yaml', 'duckdb', 'pyarrow', 'transformers', 'safetensors', 'huggingface_hub', 'hypothesis',"
        " 'rich', 'typer', 'fastapi', 'langgraph', 'pydantic'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
