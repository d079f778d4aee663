#!/bin/bash
# One device call of eval/bench/real_target_stages.py (resumable; calls back to back on one warm machine).
# The GGUF (98 MB) and the packages the GPU image lacks (site.tar.xz, 25 MB) travel in parts over the first calls
# (a call carries at most 64 MiB): .gpuwork/p1..p3 hold the GGUF's parts, .gpuwork/s the packages. Each call
# copies what it carried to ~/gw; the run starts once the GGUF is whole. Each call brings back state.tar.xz.* (its
# parts): copy them to .gpuwork/w/ and carry that path in the next call, so a bare machine goes on from it.
#     bash eval/bench/real_target_stages_call.sh smoke|BUDGET_S [extra args for real_target_stages]
#     bash eval/bench/real_target_stages_call.sh exec CMD...   (a probe once the GGUF is whole)
REPO=$PWD; G=~/gw; mkdir -p $G ~/wk
ulimit -n 65536 2>/dev/null || ulimit -n 16384 2>/dev/null  # regenerate keeps thousands of requests in flight
for f in .gpuwork/[pq]*/gg.*; do [ -f "$f" ] && cp -n "$f" $G/; done
if [ ! -d /tmp/site/duckdb ] && [ -f .gpuwork/s/site.tar.xz ]; then
  mkdir -p /tmp/site && tar xJf .gpuwork/s/site.tar.xz -C /tmp/site || exit 3
  # draftset is not pip-installed there: its entry points (the `check`/`report` commands) need a dist-info
  mkdir -p /tmp/site/draftset-0.1.0.dist-info
  printf 'Metadata-Version: 2.1\nName: draftset\nVersion: 0.1.0\n' > /tmp/site/draftset-0.1.0.dist-info/METADATA
  printf '[draftset.commands]\ncheck = eval.cli.check_cmd:register\nreport = eval.cli.report_cmd:register\n' \
    > /tmp/site/draftset-0.1.0.dist-info/entry_points.txt
fi
# wheels carried loose (.gpuwork/t: one missed by site.tar.xz) are unzipped beside it
for w in .gpuwork/t/*.whl; do [ -f "$w" ] && python3 -m zipfile -e "$w" /tmp/site; done
# the parts (any split: .gpuwork/p1..p3 in four, or q1..q2 in two) are whole once their bytes add up to the GGUF's
if [ ! -f $G/smol.gguf ] && [ "$(cat $G/gg.* 2>/dev/null | wc -c)" = 98362432 ]; then
  cat $G/gg.* > $G/smol.gguf; md5sum $G/smol.gguf
fi
# the state of an earlier machine (the rows made so far, the catalog, stages.json) when this one starts bare:
# .gpuwork/w holds the state.tar.xz a call brought back (a warm machine between calls is not a promise)
# (in parts state.tar.xz.aa, .ab, ...: a file back from a call is at most 16 MiB)
if [ ! -f ~/wk/stages.json ] && ls .gpuwork/w/state.tar.xz* >/dev/null 2>&1; then
  cat .gpuwork/w/state.tar.xz* | tar xJf - -C ~/wk && echo "state restored: $(du -sh ~/wk | cut -f1)"
fi
export PYTHONPATH=/tmp/site:$REPO PYTHONUNBUFFERED=1
if [ "$1" = smoke ]; then
  python3 -c "import duckdb, datatrove, pydantic, openai, httpx2, truststore, uvicorn, datasets, gguf, torch; import transformers, huggingface_hub; import pipeline.cli.app; print('imports ok', torch.cuda.is_available(), torch.__version__, transformers.__version__, huggingface_hub.__version__)"
  python3 -m pipeline.cli.app check --help | head -5; ls -la $G; nproc; free -g | head -2; exit 0
fi
[ -f $G/smol.gguf ] || { echo "GGUF not whole yet:"; ls -la $G; exit 0; }
# `exec CMD...`: a probe (a bench, a profile) on the machine as set up here, the GGUF at ~/gw/smol.gguf
if [ "$1" = exec ]; then shift; export DRAFTSET_HOME=~/wk/home; "$@"; exit $?; fi
BUDGET=$1; shift
set -o pipefail
timeout -s INT $((BUDGET + 30)) python3 -m eval.bench.real_target_stages --gguf $G/smol.gguf --work ~/wk --out $OUT \
  --budget-s $BUDGET "$@" 2>&1 | grep -v '^\s*$' | tee $OUT/log.txt
rc=$?
tar czf $OUT/logs.tgz -C ~/wk logs recipes stages.json 2>/dev/null
# what must outlive the machine, small enough to carry back (the model is re-imported, the build rebuilt, drafts
# retrained): without it a machine taken back between calls takes every regenerated row with it
# A call brings back at most 8 files of 16 MiB each, 64 MiB in all: the state travels in parts of 15 MiB (64K
# regenerated rows made more than one file may hold, and were lost with the machine), at most three, so that one
# call can carry them all in again beside the ~8.4 MB tree (64 MiB a call)
tar cf - -C ~/wk --exclude=home/models --exclude=home/data/build --exclude=home/drafts stages.json home hub recipes \
  2>/dev/null | xz -T0 -3 > ~/state.tar.xz
if [ "$(stat -c %s ~/state.tar.xz)" -gt $((3 * 15 * 1048576)) ]; then
  echo "state.tar.xz $(stat -c %s ~/state.tar.xz) bytes, over three parts of 15 MiB: not kept"
else
  split -b $((15 * 1048576)) ~/state.tar.xz $OUT/state.tar.xz.
  echo "state kept in $(ls $OUT/state.tar.xz.* | wc -l) part(s): copy them all to .gpuwork/w/"
fi
rm -f ~/state.tar.xz
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader
exit $rc
