#!/bin/bash
# One device call of the curve run (resumable): reassemble the GGUF on the warm machine, install the
# carried wheels once, then run the curve bench under a per-call budget. Run from the device's checkout root,
# with this repo's code copied to .gpuwork/code, the wheels in .gpuwork/whl and one GGUF half each in
# .gpuwork/h1 and .gpuwork/h2 (carried in two calls; bench_real_target_curve_notes.md has the sequence):
#     bash .gpuwork/code/eval/bench/bench_real_target_curve_call.sh BUDGET_S
REPO=$PWD; G=~/gw; mkdir -p $G ~/wk
for h in h1/part.aa h2/part.ab; do [ -f .gpuwork/$h ] && cp .gpuwork/$h $G/; done
if [ ! -f $G/smol.gguf ] && [ -f $G/part.aa ] && [ -f $G/part.ab ]; then
  cat $G/part.aa $G/part.ab > $G/smol.gguf; md5sum $G/smol.gguf
fi
if [ ! -d /tmp/site/pydantic ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpuwork/whl/*.whl || exit 3
fi
export PYTHONPATH=/tmp/site:$REPO/.gpuwork/code PYTHONUNBUFFERED=1
ROWS=""; [ -f .gpuwork/rows/rows.npz ] && ROWS="--rows $REPO/.gpuwork/rows/rows.npz"
cd .gpuwork/code
set -o pipefail
timeout -s INT $(( ${1:-560} + 25 )) python3 -m eval.bench.bench_real_target_curve --gguf $G/smol.gguf --work ~/wk \
  --out $OUT --prompts 28800 --gen-batch 2048 --sizes ${SIZES:-3000,9000,27000} --epochs ${EPOCHS:-4} \
  --batch-tokens 32768 --lr 2e-3 --budget-s ${1:-560} $ROWS 2>&1 | grep -v '^\s*$' | tee $OUT/log.txt
rc=$?
for f in ~/wk/draft-*/train/train_log.jsonl; do [ -f $f ] && tail -n 3 $f; done
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader
exit $rc
