#!/usr/bin/env bash
# Idempotent set-up: system tools, ggml sources from a pinned PyPI sdist, and the Python test venv.
# Usage: scripts/setup.sh [--with-torch]   (torch, diffusers, transformers, peft: to re-export model fixtures and to
#                                          check --lora against diffusers)
set -euo pipefail
cd "$(dirname "$0")/.."

GGML_PYPI_PKG=llama-cpp-python
GGML_PYPI_VER=0.3.36          # vendors ggml 0.25.3
PY_PKGS="onnx==1.22.0 onnxruntime==1.23.2 numpy==2.4.6"
TORCH_PKGS="torch==2.9.1 torchvision==0.24.1 onnxscript==0.7.2 diffusers==0.42.1 transformers==5.23.0 peft==0.21.2"

need_apt=()
for tool in cmake g++ make python3; do
  command -v "$tool" >/dev/null 2>&1 || need_apt+=("$tool")
done
[ -f /usr/include/zlib.h ] || need_apt+=(zlib1g-dev)   # PNG output of examples/txt2img
if [ ${#need_apt[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${need_apt[@]}" | sed 's/^python3$/python3 python3-venv/' | tr '\n' ' ')
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q $pkgs
  else
    echo "missing tools; run: sudo apt-get install -y $pkgs" >&2
    exit 1
  fi
fi

# ggml sources (never committed): unpacked from the sdist that vendors them.
if [ ! -f .deps/ggml/CMakeLists.txt ]; then
  mkdir -p .deps/dl
  python3 -m pip download -q --no-binary :all: --no-deps "$GGML_PYPI_PKG==$GGML_PYPI_VER" -d .deps/dl
  tarball=$(ls .deps/dl/*"${GGML_PYPI_VER}".tar.gz | head -1)
  top=$(tar tzf "$tarball" | awk -F/ 'NR==1{print $1}')
  tar xzf "$tarball" -C .deps "$top/vendor/llama.cpp/ggml"
  rm -rf .deps/ggml && mv ".deps/$top/vendor/llama.cpp/ggml" .deps/ggml && rm -rf ".deps/$top"
  echo "$GGML_PYPI_PKG==$GGML_PYPI_VER" > .deps/ggml/SOURCE
fi

# ggml as an installed CMake package: onnx2ggml and the programs `onnx2ggml compile` writes build against it, so
# ggml compiles once per machine rather than once per build folder.
if [ ! -f .deps/ggml-install/lib/cmake/ggml/ggml-config.cmake ]; then
  # The sdist leaves out the pkg-config template that ggml's install step reads.
  [ -f .deps/ggml/ggml.pc.in ] || printf 'Name: ggml\nDescription: ggml\nVersion: @GGML_VERSION@\nLibs: -L@CMAKE_INSTALL_FULL_LIBDIR@ -lggml -lggml-base\nCflags: -I@CMAKE_INSTALL_FULL_INCLUDEDIR@\n' > .deps/ggml/ggml.pc.in
  cmake -S .deps/ggml -B .deps/ggml-build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON \
    -DBUILD_SHARED_LIBS=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build .deps/ggml-build -j"$(nproc)" >/dev/null
  cmake --install .deps/ggml-build --prefix "$PWD/.deps/ggml-install" >/dev/null
fi

# Python oracles for tests (onnx ships the backend node-test data; onnxruntime is the reference).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import onnx, onnxruntime, numpy; assert onnx.__version__=='1.22.0'" 2>/dev/null; then
  .venv/bin/pip install -q $PY_PKGS
fi
if [ "${1:-}" = "--with-torch" ]; then
  .venv/bin/python -c "import torch, torchvision, diffusers, transformers, peft" 2>/dev/null || .venv/bin/pip install -q $TORCH_PKGS
fi
echo "setup: ok (ggml from $(cat .deps/ggml/SOURCE))"
