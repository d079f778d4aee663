#!/usr/bin/env bash
# Kimi-scale figures on a 2-GPU host (nvidia-h200-x2): bash eval/bench/run_scale.sh OUT_DIR
#  1. capture at the compute ceiling: eval/bench/bench_capture_train (one GPU)
#  2. tensor-parallel capture (transformers tp_plan, 2 ranks) vs one GPU on a random DeepSeek-V3-shaped MoE
#  3. offline (capture, then train) vs online training on the same rows, one GPU
set -uo pipefail
OUT=${1:?out dir}; W=${SCALE_DIR:-/tmp/scale}; mkdir -p "$OUT" "$W"
exec > >(tee "$OUT/all.log") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PY:-python3}; TR="torchrun --standalone --nproc-per-node 2"
nvidia-smi --query-gpu=name,memory.total --format=csv || true
step() { echo; echo "[$1] $(date +%T)"; }
step prepare; $PY -m eval.bench.bench_scale prepare "$W"
step bench; $PY -m eval.bench.bench_capture_train --runs 3 ${SCALE_TINY:+--quick} --json "$OUT/bench_capture_train.json"
for dt in bf16 fp32; do
  flag=$([ $dt = fp32 ] && echo "--dtype float32" || echo "--dtype bfloat16")
  step dsv3-1gpu-$dt; $PY -m pipeline.capture "$W/build-dsv3" "$W/dsv3" "$W/cap1-$dt" $flag
  step dsv3-tp2-$dt; $TR -m pipeline.capture "$W/build-dsv3" "$W/dsv3" "$W/cap2-$dt" $flag --tp
  step compare-$dt; $PY -m eval.bench.bench_scale compare "$W/cap1-$dt" "$W/cap2-$dt" | tee "$OUT/tp_compare_$dt.json"
done
step llama-capture; $PY -m pipeline.capture "$W/build-llama" "$W/llama" "$W/cap-llama"
T="--epochs 1 --batch-tokens 8192 --ttt-steps 7 --save-every 1000000 --log-every 8"
step train-offline; $PY -m pipeline.train "$W/cap-llama" "$W/draft-off" --model "$W/llama" $T
step train-online; $PY -m pipeline.train "$W/build-llama" "$W/draft-on" --online --model "$W/llama" $T
step summary; $PY -m eval.bench.bench_scale summary "$W" "$OUT/all.log" | tee "$OUT/scale.json"
grep -c "has NOT been destroyed\|destroy_process_group" "$OUT/all.log" | sed 's/^/process-group warnings: /'
grep -c "Mismatch dtype" "$OUT/all.log" | sed 's/^/rms_norm dtype warnings: /'
