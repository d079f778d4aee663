#!/usr/bin/env bash
# Online training MFU on one GPU, per TTT attention kernel (issue 29's >= 50% goal):
#     bash eval/bench/run_mfu.sh OUT_DIR [KERNEL...]        # default kernels: eager flex
# The random Llama target and rows of eval/bench/bench_scale (2.8B parameters, 128 rows x 2,048 tokens, 7 TTT
# steps), each kernel trained twice in alternation (eager, flex, eager, flex: this machine's state drifts between
# runs more than a kernel's choice may move it), loop time only. SCALE_TINY=1 runs it on a CPU in seconds.
set -uo pipefail
OUT=${1:?out dir}; shift; KERNELS=${*:-eager flex}; W=${SCALE_DIR:-/tmp/scale}; PY=${PY:-python3}
mkdir -p "$OUT" "$W"; export PYTHONUNBUFFERED=1
[ -d "$W/llama" ] || $PY -m eval.bench.bench_scale prepare "$W" --only llama || exit 1
T="--epochs 1 --batch-tokens 8192 --ttt-steps 7 --save-every 1000000 --log-every 8"
drafts=()
for round in 1 2; do
  for k in $KERNELS; do
    d="$W/on-$k-$round"; rm -rf "$d"
    # shellcheck disable=SC2086
    $PY -m pipeline.train "$W/build-llama" "$d" --online --model "$W/llama" $T --ttt-attention "$k" \
      > "$OUT/train-$k-$round.log" 2>&1 || { echo "train $k $round failed:"; tail -5 "$OUT/train-$k-$round.log"; exit 1; }
    # the draft's weights and optimizer state (7.6 GB a run at full size) are not what is measured
    find "$d" -name '*.safetensors' -delete; find "$d" -name '*.pt' -delete
    drafts+=("$d")
  done
done
$PY -m eval.bench.bench_scale mfu "$W" "${drafts[@]}" | tee "$OUT/mfu.json"
