#!/usr/bin/env bash
# The one prepared GPU check (issue 27): full-size SD 1.5 parts on CUDA, exact and fast, against PyTorch, with
# stable-diffusion.cpp built for CUDA on the same card and the same seeded weights.
#
# A GPU machine is lent only at times and for minutes, so everything that can be built is built here first:
#   scripts/gpu_bench.sh --pack      # builds build-cuda/onnx2ggml and sd.cpp's CUDA sd-cli (nvcc, sm_$CUDA_ARCH,
#                                    # default 90: H100/H200), packs them with the wheels torch's machine lacks
#                                    # into .gpu/ (git-ignored: add /.gpu/ to .git/info/exclude, carry .gpu)
# and on the GPU machine, from the repository root:
#   scripts/gpu_bench.sh             # writes logs and JSON under $OUT (default build/gpu_out)
# The GPU machine needs python3 with torch, transformers, onnx and numpy (diffusers comes as a carried wheel).
# Steps: export the four parts full size with PyTorch references (scripts/export_sd15.py), run them with
# tests/sd15_tests.py --device CUDA0 (exact, then fast; each also timed with `onnx2ggml bench`), then
# scripts/sdcpp_bench.sh with the carried sd-cli, default flags and --diffusion-fa.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
ARCH=${CUDA_ARCH:-90}

if [[ ${1:-} == --pack ]]; then
    set -e
    export CCACHE_BASEDIR=$(dirname "$REPO")
    cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DGGML_SOURCE_DIR="$REPO/.deps/ggml" -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
        -DONNX2GGML_KERNEL_ARCH=x86-64-v3 -DBUILD_SHARED_LIBS=OFF >/dev/null
    nice -n 19 cmake --build build-cuda --target onnx2ggml -j"$(nproc)"
    SDCPP_BACKEND=cuda SDCPP_BUILD_ONLY=1 scripts/sdcpp_bench.sh
    mkdir -p .gpu/whl
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 -d .gpu/whl diffusers==0.42.1 importlib_metadata==10.2.0
    tar -C . -cJf .gpu/dist.tar.xz --transform 's|.*/||' build-cuda/onnx2ggml build/sdcpp/build-cuda/bin/sd-cli
    du -sh .gpu/*
    exit 0
fi

OUT=${OUT:-$REPO/build/gpu_out}
mkdir -p "$OUT"
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 )) s] $*"; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
lscpu | sed -n 's/^Model name: *//p; s/^Flags:.*\(avx512f\).*/isa: avx512f/p' | sort -u
DIST=/tmp/o2g_dist
mkdir -p "$DIST" && tar -C "$DIST" -xJf .gpu/dist.tar.xz || exit 1
ldd "$DIST/onnx2ggml" | grep -E "not found|cuda|cublas" || true
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1

step "export the SD 1.5 parts, full size, with PyTorch references"
SD=/tmp/sd15_full
if ! timeout 300 python3 scripts/export_sd15.py --out-dir "$SD" --no-ort-check >"$OUT/export.log" 2>&1; then
    tail -5 "$OUT/export.log"
    step "TorchScript export failed; the dynamo exporter"
    timeout 300 python3 scripts/export_sd15.py --dynamo --out-dir "$SD" --no-ort-check >"$OUT/export_dynamo.log" 2>&1 \
        || { tail -20 "$OUT/export_dynamo.log"; exit 1; }
    for f in "$SD"/manifest.dynamo*.json; do cp "$f" "$SD/manifest.json"; done
fi
tail -3 "$OUT/export.log"

for prec in exact fast; do
    step "onnx2ggml on CUDA0, $prec"
    timeout 300 python3 tests/sd15_tests.py --manifest "$SD/manifest.json" --cli "$DIST/onnx2ggml" --device CUDA0 \
        --no-ort --precision "$prec" --bench 10 --json "$OUT/ours_$prec.json" 2>&1 | grep -v "^  ok \|^  FAIL" | tail -12
    grep -h "max abs" "$OUT/ours_$prec.json" >/dev/null 2>&1 || true
done

for flags in "" "--diffusion-fa" "--diffusion-fa --diffusion-conv-direct --vae-conv-direct"; do
    step "stable-diffusion.cpp on CUDA: ${flags:-default flags}"
    SDCPP_CLI="$DIST/sd-cli" SDCPP_DIR=/tmp/sdcpp PYTHON=python3 RUNS=3 THREADS=16 SDCPP_EXTRA_ARGS="$flags" \
        timeout 240 scripts/sdcpp_bench.sh 2>&1 | grep -E "^run |sdcpp_|error|failed" | tail -6
    cp /tmp/sdcpp/logs/run_f16conv_1.log "$OUT/sdcpp_run_$(echo "${flags:-default}" | tr -c 'a-z0-9\n' _).log" 2>/dev/null
done
step "done"
