#!/usr/bin/env bash
# Builds everything and runs every test: loader fuzzing, malformed inputs (under AddressSanitizer),
# op tests and model tests against onnxruntime, the official ONNX node tests against the allow-list,
# `onnx2ggml compile` (generated programs built and compared bit for bit with `onnx2ggml run`), and the Python
# package (onnxruntime's API against onnxruntime, node tests through onnx's BackendTest runner); then the same
# suites on a real non-CPU backend, Vulkan on Mesa's lavapipe, and on the CPU through the portable path
# (docs/backends.md). ONNX2GGML_NO_VULKAN=1 skips the Vulkan job.
set -euo pipefail
cd "$(dirname "$0")/.."
free_gb() { df -Pk . | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }'; }
free0=$(free_gb)
pre_times=()
pre() {  # a set-up step: must pass; its time goes into the table at the end
  local t0=$SECONDS
  "$@"
  pre_times+=("$(printf '%5d s  (set-up) %s' $((SECONDS - t0)) "$*")")
}
VULKAN_JOB=1
[ "${ONNX2GGML_NO_VULKAN:-0}" != 1 ] || VULKAN_JOB=0
LOGS=$(mktemp -d)
if [ $VULKAN_JOB = 1 ]; then
  pre scripts/setup.sh --vulkan-tools
  # ggml's Vulkan build (its shaders: about 10 minutes cold) and ours against it run beside the CPU steps, at the
  # lowest priority: in the time they leave a core idle. Its own process group, stopped if this script stops first.
  setsid bash -c 'nice -n 19 scripts/setup.sh --with-vulkan && nice -n 19 scripts/build.sh --vulkan -DONNX2GGML_UNITY=ON' \
    >"$LOGS/vulkan_build.log" 2>&1 &
  VK_PID=$!
else
  pre scripts/setup.sh
fi
# torch, diffusers and transformers (about 3 GB of wheels, 6 GB unpacked: 4 minutes of network and disk) are fetched
# beside the builds into .deps/torch-prefix, which the venv sees only from the step that turns torch on, near the
# end: every CPU step before runs without torch, as a user's set-up does.
setsid nice -n 19 scripts/setup.sh --fetch-torch >"$LOGS/torch_fetch.log" 2>&1 &
TORCH_PID=$!
trap 'kill -- ${VK_PID:+-$VK_PID} -$TORCH_PID 2>/dev/null || true' EXIT  # background jobs end with this script
# A fresh machine's build/ compiles in unity batches, as the other builds below (CI starts without a compiler cache);
# an existing build/ keeps its configuration.
UNITY=()
[ -f build/CMakeCache.txt ] || UNITY=(-DONNX2GGML_UNITY=ON)
pre scripts/build.sh "${UNITY[@]}"
# CI starts without a compiler cache, so the builds below compile our sources in unity batches (ONNX2GGML_UNITY)
# and our kernels at one level: about half the cold time. ccache still shares what it can between them.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$PWD")}"
  LAUNCH=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
else
  LAUNCH=()
fi
# The fuzz build (clang: ASan, UBSan, coverage) also gives the sanitized CLI and test_proto_fuzz of the
# hostile-input tests (ggml itself is not instrumented).
pre scripts/fuzz.sh --build-only
ASAN_CLI=build-fuzz/onnx2ggml
export ASAN_OPTIONS=detect_leaks=0
# A ThreadSanitizer build of the concurrency test. Its sessions run ggml with one thread each: ggml's CPU threads
# (OpenMP, not instrumented) would be reported as races TSan cannot see through; the threads checked are ours.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
  -DONNX2GGML_TSAN=ON -DONNX2GGML_UNITY=ON -DONNX2GGML_NATIVE=ON \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/ggml-install" "${LAUNCH[@]}" >/dev/null
pre cmake --build build-tsan -j"$(nproc)" --target test_concurrency
PY=.venv/bin/python
setup_s=$SECONDS
status=0
failed=()
times=()
# Each step's wall time goes into a table at the end (CI has 90 minutes; the suite should stay under 60), with the
# disk left after it (CI's disk is finite: a full one fails whichever step comes next).
# A failed step's last lines are repeated at the end, where a CI log's tail shows them.
run() {
  echo; echo "=== $*"; local t0=$SECONDS log="$LOGS/step${#times[@]}.log"
  "$@" 2>&1 | tee "$log" || { echo "FAILED: $*"; status=1; failed+=("$*"); failed_logs+=("$log"); }
  times+=("$(printf '%5d s %5s GB free  %s' $((SECONDS - t0)) "$(free_gb)" "$*")")
}
failed_logs=()
run ctest --test-dir build --output-on-failure
run build-fuzz/test_proto_fuzz examples/small_cnn.onnx 3000
run $PY tests/malformed_tests.py --cli $ASAN_CLI
run $PY tests/lora_tests.py --cli $ASAN_CLI --no-torch --no-compile --mutations 200
run env TSAN_OPTIONS=halt_on_error=1 build-tsan/test_concurrency tests/models/vae_decoder_like.onnx 1
# libFuzzer on the loader and on mutated models through a session, 60 s each, and the committed findings
# replayed (clang-14; tests/fuzz, docs/reliability.md).
run scripts/fuzz.sh --ci
run $PY tests/op_tests.py -j 2
run $PY tests/op_tests.py --coverage
run $PY tests/model_tests.py --threads 2
run $PY tests/sd15_tests.py --threads 2
run $PY tests/sd15_tests.py --threads 2 --manifest tests/models/families_small/manifest.json
run $PY tests/sd15_tests.py --threads 2 --manifest tests/models/sdxl_small/manifest.json
run $PY tests/flavour_tests.py --threads 2 --parts unet,vae_decoder,text_encoder  # SD files as published (docs/models_published.md)
run $PY tests/lora_tests.py --threads 2
run $PY tests/checkpoint_import_test.py
run $PY tests/fp16_weights_test.py
run $PY tests/pass_tests.py
run $PY scripts/op_schema.py --check  # the op table's input/output counts and rules against the ONNX schemas
run $PY scripts/regenerate.py --check  # derived lists and quoted counts agree with the table and docs/conformance.md
run python3 scripts/house_check.py  # files of src/ <= 600 lines, functions <= 80 unless a "Long:" comment says why
run $PY tests/shape_change_test.py
run $PY tests/tokenizer_test.py
run $PY tests/embedding_tests.py  # textual inversion against diffusers: tokenize, run, txt2img, a compiled encoder (~50 s)
run $PY tests/txt2img_test.py
run $PY tests/tiling_test.py  # --vae-tiling: exact tile geometry, VAE seam error under diffusers' own, memory, txt2img, a compiled decoder (~10 s)
run $PY tests/node_tests.py -j 2 --check
run $PY tests/compile_tests.py
# The Python package (pip install . links the set-up's ggml and compiles our sources as build/ did, so ccache gives
# it build/'s objects; build folder kept for reruns): onnxruntime's API
# compared with onnxruntime itself, and the node tests through onnx's own BackendTest runner.
PIP_CCACHE=()
# ccache hashes the compiler's name: the same one as build/ (c++, where scikit-build-core would take g++).
[ ${#LAUNCH[@]} = 0 ] || PIP_CCACHE=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -C cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache
  -C "cmake.define.CMAKE_CXX_COMPILER=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)"
  -C "cmake.define.CMAKE_C_COMPILER=$(sed -n 's/^CMAKE_C_COMPILER:FILEPATH=//p' build/CMakeCache.txt)"
  -C "cmake.define.ONNX2GGML_UNITY=$(sed -n 's/^ONNX2GGML_UNITY:BOOL=//p' build/CMakeCache.txt)")
run .venv/bin/pip install -q --no-build-isolation . -C build-dir=build-python "${PIP_CCACHE[@]}"
run $PY tests/python_api_tests.py --threads 2
run $PY tests/backend_api_tests.py -j 2 --check
# More than one machine through ggml's RPC backend, on 127.0.0.1: onnx2ggml-rpc-server started at a free port, its
# error lines, the model tests and SD 1.5 parts on RPC0 equal bit for bit to the same graph on the local CPU, a
# compiled program with --rpc, and a Python pipeline over CPU and RPC0; the server is stopped at the end
# (docs/backends.md; about 30 s).
run $PY tests/rpc_tests.py --threads 2 --python

# The ggml-op paths other backends take, on the CPU (custom CPU kernels off where a path exists).
run env ONNX2GGML_PORTABLE=1 $PY tests/op_tests.py -j 2 -q
run env ONNX2GGML_PORTABLE=1 $PY tests/model_tests.py --threads 2
run env ONNX2GGML_PORTABLE=1 $PY tests/node_tests.py -j 2 -q --check
run env ONNX2GGML_PORTABLE=1 $PY tests/flavour_tests.py --threads 2 --portable --no-compile --flavours 'dynamo|optimum|mmdit|t5|^olive-fp32$|^amuse-fp16-io16$|^fp16-f32ops-io32$'

# Run-time CPU dispatch: the same binary with our kernels and ggml's CPU code at each lower x86-64 level, and
# under QEMU's x86-64 emulator, which has no AVX-512 (an AVX-512 instruction would stop it; docs/platforms.md).
run env ONNX2GGML_CPU=v2 $PY tests/op_tests.py -j 2 -q
run env ONNX2GGML_CPU=v2 $PY tests/model_tests.py --threads 2
if grep -q avx512f /proc/cpuinfo; then  # without AVX-512, v3 is what every other step ran
  run env ONNX2GGML_CPU=v3 $PY tests/op_tests.py -j 2 -q
  run env ONNX2GGML_CPU=v3 $PY tests/sd15_tests.py --threads 2
fi
run $PY tests/cpu_level_test.py --emulator "qemu-x86_64 -cpu max"

# ARM64 and Windows: the cross-built CLIs under QEMU's ARM64 emulator and under wine, op and model tests (and the
# hostile-input suite on Windows: its file mappings and fault guard are its own; docs/platforms.md).
run scripts/setup.sh --with-cross
run scripts/cross_arm64.sh
run scripts/cross_windows.sh

# diffusers' ONNX pipeline on onnx2ggml against onnxruntime. torch comes in here, after every other CPU test, because
# tests/lora_tests.py changes what it checks when torch is importable (the Vulkan tests below do not import it).
torch_fetch() {  # the time the step below waited for it; a failed fetch leaves it to install into the venv
  wait $TORCH_PID || { echo "fetching torch failed (installed into the venv instead):"; tail -n 20 "$LOGS/torch_fetch.log"; }
}
pre torch_fetch
run scripts/setup.sh --with-torch
run $PY tests/diffusers_dropin_test.py

# Vulkan on lavapipe, exact precision: the bars of the CPU, and no ggml node computed off the device for the models.
vulkan_build() {  # the time the tests waited for it
  wait $VK_PID || { echo "the Vulkan build failed:"; tail -n 40 "$LOGS/vulkan_build.log"; return 1; }
}
if [ $VULKAN_JOB = 1 ]; then
  pre vulkan_build
  export GGML_VK_VISIBLE_DEVICES=0  # ggml skips CPU-type Vulkan devices otherwise
  VK=build-vulkan/onnx2ggml
  # Models first: their pipelines fill Mesa's shader cache, which the many small op and node tests then reuse.
  # CONV_2D: Vulkan's plan takes the convolutions whose im2col would be banded directly (docs/backends.md).
  # FLASH_ATTN_EXT: exact mode's attention on Vulkan, the small UNet's head size of 4 zero-padded to the kernel's 8.
  # GEGLU_ERF: the UNet's feed-forward as ggml's split GLU, its halves read in place (no copies).
  run $PY tests/sd15_tests.py --cli $VK --device Vulkan0 --threads 2 --no-ort --require-op CONV_2D \
    --require-op FLASH_ATTN_EXT --require-op GEGLU_ERF
  run $PY tests/model_tests.py --cli $VK --device Vulkan0 --threads 2
  # --device-memory: the UNet with its weights in host memory, bit-identical to the unlimited run, by `run` and by a
  # compiled program (docs/backends.md).
  run $PY tests/device_memory_test.py --cli $VK --device Vulkan0 --threads 2 --program
  run env ONNX2GGML_DEVICE=Vulkan0 $PY tests/op_tests.py --cli $VK -j 2 -q --timeout 300
  run env ONNX2GGML_DEVICE=Vulkan0 $PY tests/node_tests.py --cli $VK -j 2 -q --timeout 300 --check
  # New exporters' files (opset 23 holds every new op; the VAE decoders add lavapipe time, not signal).
  run $PY tests/flavour_tests.py --cli $VK --device Vulkan0 --threads 2 --no-compile --flavours 'dynamo-opset23|optimum|mmdit|t5' --parts unet,text_encoder
  # onnxruntime-optimizer files: NCHW GroupNorm and its contrib ops (Olive, fp32) and NHWC with fp16 I/O (Amuse); their
  # VAE decoders' contrib ops (GroupNorm, NhwcConv, SkipGroupNorm) are all in the UNets.
  run $PY tests/flavour_tests.py --cli $VK --device Vulkan0 --threads 2 --no-compile --flavours '^(olive-fp32|amuse-fp16-io16)$' --parts unet,text_encoder
  # Not in CI, for time (about 6 min on lavapipe): compiled programs on Vulkan0 against run on Vulkan0,
  #   $PY tests/compile_tests.py --vulkan 'sd15_vae_decoder|vae_decoder_like'   (docs/backends.md)
fi
echo
echo "step times (set-up and builds before the first step: $setup_s s; total $SECONDS s; disk free at the start $free0 GB):"
printf '%s\n' "${pre_times[@]}" "${times[@]}"
echo
# The failed steps last, with their output's last lines, so the tail of a CI log names them and shows why.
for i in "${!failed[@]}"; do
  echo "FAILED: ${failed[$i]}"; tail -n 25 "${failed_logs[$i]}" | sed 's/^/    | /'
done
# A fuzz finding that does not fail the step (scripts/fuzz.sh --ci) is shown there too, with its input.
grep -h -A4 "^NEW FINDING" "$LOGS"/step*.log 2>/dev/null | cut -c1-4200 | sed 's/^/    | /' || true
if [ $status -eq 0 ]; then echo "all tests passed"; else echo "some tests FAILED"; fi
exit $status
