#!/usr/bin/env bash
# Reference timings from stable-diffusion.cpp (which builds the same ggml ops by hand) for the
# Stable Diffusion 1.5 VAE decoder (latent 1x4x32x32 -> 256x256 image) and one UNet step
# (latent 32x32, cond + uncond = our batch-2 CFG step), CPU, fp32 weights, seeded random weights.
#
#   scripts/sdcpp_bench.sh                       # RUNS=2 THREADS=2
#   RUNS=5 scripts/sdcpp_bench.sh
#   SDCPP_F32_CONV=1 scripts/sdcpp_bench.sh      # also a patched build whose Conv2d weights stay F32
#   SDCPP_EXTRA_ARGS="--vae-conv-direct" scripts/sdcpp_bench.sh
#   SDCPP_LLAMAFILE=OFF scripts/sdcpp_bench.sh   # ggml without llamafile sgemm (sd.cpp's own default)
#   SDCPP_BACKEND=cuda scripts/sdcpp_bench.sh    # sd.cpp built for CUDA (CUDA_ARCH, default 90) into build-cuda;
#                                                # also vulkan; both build with GGML_NATIVE=OFF (portable host code)
#
# Everything lives in build/sdcpp/ (git-ignored); each step is skipped when already done:
#   1. pip download of the pinned sdist of stable-diffusion-cpp-python (it vendors stable-diffusion.cpp
#      and ggml under vendor/), unpacked into build/sdcpp/
#   2. cmake build (Release, GGML_NATIVE=ON, GGML_LLAMAFILE=ON as in onnx2ggml's own ggml build, CPU
#      only, no WebP/WebM) of the CLI `sd-cli` into build/sdcpp/build (nice -n 19, -j$JOBS); the
#      vendored ggml defaults to GGML_LLAMAFILE=OFF, which SDCPP_LLAMAFILE=OFF keeps (build-nollamafile)
#   3. build/sdcpp/sd15_random_f32.safetensors: the SD 1.5 UNet, VAE and CLIP text encoder from
#      scripts/export_sd15.py:build_model (same seeds, hence the same weights as the ONNX graphs
#      under build/sd15_full/), all fp32, keys in the diffusers/transformers layout with the prefixes
#      that stable-diffusion.cpp's loader maps itself ("unet." -> model.diffusion_model.*,
#      "vae." -> first_stage_model.*, "te." -> cond_stage_model.transformer.*)
#   4. RUNS runs of sd-cli txt2img 256x256, 1 euler step, cfg 7 (cond and uncond), --type f32;
#      prints the min over runs of "sampling completed, taking Xs" (the UNet step) and
#      "decode_first_stage completed, taking Xs" (the VAE decode) and a final line
#      sdcpp_vae_decode_ms=<x> sdcpp_unet_step_ms=<y> sdcpp_conv_weights=f16 sdcpp_llamafile=on
#
# Precision: stable-diffusion.cpp creates every Conv2d weight as GGML_TYPE_F16 (Conv2d::init_params in
# src/ggml_extend.hpp), whatever the file or --type says, and ggml_conv_2d im2cols into the kernel's
# type, so all convolutions are F16 x F16 GEMMs (F32 accumulation); Linear, norms and attention stay
# F32. SDCPP_F32_CONV=1 additionally builds a copy with that one line patched to F32 (build/sdcpp/
# src-f32conv, build/sdcpp/build-f32conv) and measures it too (its line, sdcpp_conv_weights=f32,
# comes just before the final one).
#
# Env: RUNS (2), THREADS (2), JOBS (2, build parallelism), SDCPP_PY_VERSION (pinned sdist version),
#      SDCPP_LLAMAFILE (ON), SDCPP_F32_CONV (0), SDCPP_EXTRA_ARGS (extra sd-cli flags, word-split),
#      PYTHON (.venv/bin/python), SDCPP_DIR (build/sdcpp).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SDCPP_PY_VERSION=${SDCPP_PY_VERSION:-0.4.7}   # newest stable-diffusion-cpp-python on PyPI when pinned
RUNS=${RUNS:-2}
THREADS=${THREADS:-2}
JOBS=${JOBS:-2}
SDCPP_F32_CONV=${SDCPP_F32_CONV:-0}
SDCPP_LLAMAFILE=${SDCPP_LLAMAFILE:-ON}
case $SDCPP_LLAMAFILE in ON | OFF) ;; *) echo "SDCPP_LLAMAFILE must be ON or OFF" >&2; exit 1 ;; esac
SDCPP_BACKEND=${SDCPP_BACKEND:-cpu}
case $SDCPP_BACKEND in
    cpu) BACKEND_ARGS=(-DGGML_NATIVE=ON) ;;
    cuda) BACKEND_ARGS=(-DSD_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON) ;;
    vulkan) BACKEND_ARGS=(-DSD_VULKAN=ON -DGGML_NATIVE=ON)  # headers as scripts/setup.sh --with-vulkan unpacks them
            [[ -d $(dirname "$0")/../.deps/vulkan/usr/include ]] && BACKEND_ARGS+=(
                -DVulkan_INCLUDE_DIR="$(cd "$(dirname "$0")/.." && pwd)/.deps/vulkan/usr/include"
                -DVulkan_LIBRARY="$(ldconfig -p | awk '/libvulkan.so.1 / && !p {p=$NF} END {print p}')") ;;
    *) echo "SDCPP_BACKEND must be cpu, cuda or vulkan" >&2; exit 1 ;;
esac
SUFFIX=$([[ $SDCPP_LLAMAFILE == ON ]] || printf %s -nollamafile)$([[ $SDCPP_BACKEND == cpu ]] || printf %s "-$SDCPP_BACKEND")
SDCPP_EXTRA_ARGS=${SDCPP_EXTRA_ARGS:-}
PY=${PYTHON:-$REPO/.venv/bin/python}
WORK=${SDCPP_DIR:-$REPO/build/sdcpp}
SDIST=$WORK/stable_diffusion_cpp_python-$SDCPP_PY_VERSION.tar.gz
SRCROOT=$WORK/stable_diffusion_cpp_python-$SDCPP_PY_VERSION
SRC=$SRCROOT/vendor/stable-diffusion.cpp
CKPT=$WORK/sd15_random_f32.safetensors
LOGS=$WORK/logs

log() { printf '[sdcpp_bench] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
mkdir -p "$WORK" "$LOGS"

# SDCPP_CLI=path/to/sd-cli skips steps 1-2 (a binary built elsewhere, e.g. on a GPU machine); SDCPP_CKPT_ONLY=1
# stops after step 3 (the checkpoint).
if [[ -z ${SDCPP_CLI:-} ]]; then
# ----------------------------------------------------------------------------- 1. sdist
if [[ ! -f $SDIST ]]; then
    log "downloading stable-diffusion-cpp-python==$SDCPP_PY_VERSION (sdist)"
    "$PY" -m pip download --no-binary stable-diffusion-cpp-python --no-deps --no-cache-dir -d "$WORK" \
        "stable-diffusion-cpp-python==$SDCPP_PY_VERSION" >"$LOGS/pip_download.log" 2>&1 \
        || { tail -20 "$LOGS/pip_download.log" >&2; die "pip download failed"; }
fi
[[ -f $SDIST ]] || die "expected $SDIST after pip download"
if [[ ! -f $SRC/CMakeLists.txt ]]; then
    log "unpacking $(basename "$SDIST")"
    tar -xzf "$SDIST" -C "$WORK"
fi
[[ -f $SRC/CMakeLists.txt ]] || die "no vendored stable-diffusion.cpp under $SRCROOT/vendor"

# ----------------------------------------------------------------------------- 2. build sd-cli
build_cli() {  # build_cli SRC_DIR BUILD_DIR TAG
    local src=$1 build=$2 tag=$3
    if [[ -x $build/bin/sd-cli ]] && grep -qsx "GGML_LLAMAFILE:BOOL=$SDCPP_LLAMAFILE" "$build/CMakeCache.txt"; then
        return 0
    fi
    if ! grep -qsx "GGML_LLAMAFILE:BOOL=$SDCPP_LLAMAFILE" "$build/CMakeCache.txt"; then
        log "configuring stable-diffusion.cpp ($tag: Release, GGML_LLAMAFILE=$SDCPP_LLAMAFILE, $SDCPP_BACKEND: ${BACKEND_ARGS[*]})"
        # GIT_EXE=/bin/false: the unpacked tree has no .git, and git would otherwise report the commit
        # of the enclosing onnx2ggml checkout as the stable-diffusion.cpp / ggml commit.
        nice -n 19 cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release "${BACKEND_ARGS[@]}" \
            -DGGML_LLAMAFILE="$SDCPP_LLAMAFILE" -DSD_WEBP=OFF -DSD_WEBM=OFF -DGIT_EXE=/bin/false \
            >"$LOGS/cmake_configure_$tag.log" 2>&1 || { tail -30 "$LOGS/cmake_configure_$tag.log" >&2; die "cmake configure failed"; }
    fi
    log "building sd-cli ($tag; nice -n 19, -j$JOBS; several minutes on 2 cores)"
    nice -n 19 cmake --build "$build" --target sd-cli -j"$JOBS" >"$LOGS/cmake_build_$tag.log" 2>&1 \
        || { tail -30 "$LOGS/cmake_build_$tag.log" >&2; die "build failed"; }
    [[ -x $build/bin/sd-cli ]] || die "no $build/bin/sd-cli after the build"
}
build_cli "$SRC" "$WORK/build$SUFFIX" "f16conv$SUFFIX"

if [[ $SDCPP_F32_CONV == 1 ]]; then
    SRC32=$WORK/src-f32conv
    if [[ ! -f $SRC32/.patched ]]; then
        log "patching a copy of the vendored tree: Conv2d weights F32 instead of F16"
        rm -rf "$SRC32"
        cp -r "$SRC" "$SRC32"
        f=$SRC32/src/ggml_extend.hpp
        sed -i '/^class Conv2d : public UnaryBlock {/,/^};/ s/enum ggml_type wtype = GGML_TYPE_F16;/enum ggml_type wtype = GGML_TYPE_F32;  \/\/ onnx2ggml sdcpp_bench: F32 conv/' "$f"
        [[ $(grep -c 'onnx2ggml sdcpp_bench: F32 conv' "$f") == 1 ]] || die "Conv2d patch did not apply exactly once in $f"
        touch "$SRC32/.patched"
    fi
    build_cli "$SRC32" "$WORK/build-f32conv$SUFFIX" "f32conv$SUFFIX"
fi
if [[ ${SDCPP_BUILD_ONLY:-0} == 1 ]]; then log "built $WORK/build$SUFFIX/bin/sd-cli"; exit 0; fi
fi

# ----------------------------------------------------------------------------- 3. checkpoint
if [[ ! -f $CKPT ]]; then
    log "writing $CKPT (SD 1.5 architecture, seeded random fp32 weights; ~4.3 GB)"
    OMP_NUM_THREADS=$THREADS nice -n 19 "$PY" - "$REPO" "$CKPT" <<'EOF'
import os
import sys

repo, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(repo, "scripts"))
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import export_sd15 as ex  # noqa: E402  (same configs and seeds as build/sd15_full/*.onnx)

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
# prefixes that stable-diffusion.cpp's name conversion maps (name_conversion.cpp: "unet." ->
# model.diffusion_model. + diffusers->LDM unet names, "vae." -> first_stage_model. + diffusers->LDM
# vae names, "te." -> cond_stage_model.transformer., followed by the HF CLIP names text_model.*)
PREFIX = {"unet": "unet.", "vae": "vae.", "text_encoder": "te."}
state = {}
for kind in ("unet", "vae", "text_encoder"):
    m = ex.build_model(kind, ex.FULL, f"sd15/{kind}")  # export_sd15.main uses prefix "sd15"
    n = 0
    for k, v in m.state_dict().items():
        if k.endswith("position_ids"):
            continue
        v = v.detach().to(torch.float32).contiguous().clone()
        if kind == "vae" and ".attentions." in k and k.endswith(".weight") and v.ndim == 2:
            # the original SD 1.5 checkpoint (what sd.cpp users load) stores the VAE mid-block
            # attention q/k/v/proj_out as 1x1 convs; sd.cpp then builds them as Conv2d, as there
            v = v[:, :, None, None].contiguous()
        if kind == "text_encoder" and not k.startswith("text_model."):
            k = "text_model." + k  # transformers 5 drops the prefix that sd.cpp (HF CLIP layout) expects
        state[PREFIX[kind] + k] = v
        n += v.numel()
    print(f"  {kind}: {n} params", flush=True)
    del m
tmp = out + ".tmp"
save_file(state, tmp, metadata={"format": "pt", "note": "onnx2ggml scripts/sdcpp_bench.sh: SD 1.5 "
                                "architecture, seeded random weights from export_sd15.build_model"})
os.replace(tmp, out)
EOF
fi

if [[ ${SDCPP_CKPT_ONLY:-0} == 1 ]]; then log "wrote $CKPT"; exit 0; fi

# ----------------------------------------------------------------------------- 4. runs
CLI=${SDCPP_CLI:-$WORK/build$SUFFIX/bin/sd-cli}
if [[ -f $SDIST ]]; then
    echo "stable-diffusion-cpp-python sdist: $SDCPP_PY_VERSION ($(basename "$SDIST"), sha256 $(sha256sum "$SDIST" | cut -c1-16)...)"
    echo "vendored ggml version: $(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))/\2/p' "$SRC/ggml/CMakeLists.txt" | paste -sd.)"
fi
echo "sd-cli --version: $("$CLI" --version 2>&1 | head -1 || true)  (the sdist carries no git metadata: no upstream commit recorded)"

to_ms() { awk -v s="$1" 'BEGIN { printf "%d", s * 1000 + 0.5 }'; }

bench() {  # bench CLI TAG -> prints per-run lines; sets BEST_UNET BEST_VAE
    local cli=$1 tag=$2 i rlog s_unet s_vae u v
    # shellcheck disable=SC2206
    local cmd=("$cli" -M img_gen -m "$CKPT" -p "a photograph of an astronaut riding a horse" -n ""
               -W 256 -H 256 --steps 1 --sampling-method euler --cfg-scale 7.0 -s 42
               -t "$THREADS" --type f32 -v $SDCPP_EXTRA_ARGS -o "$WORK/out_$tag.png")
    printf 'command (%s):' "$tag"; printf ' %q' "${cmd[@]}"; echo
    BEST_UNET="" BEST_VAE=""
    for ((i = 1; i <= RUNS; i++)); do
        rlog=$LOGS/run_${tag}_$i.log
        rm -f "$WORK/out_$tag.png"
        if ! "${cmd[@]}" >"$rlog" 2>&1; then
            tail -30 "$rlog" >&2
            die "sd-cli failed ($tag, run $i), log: $rlog"
        fi
        [[ -f $WORK/out_$tag.png ]] || die "sd-cli wrote no image ($tag, run $i), log: $rlog"
        s_unet=$(sed -n 's/.*sampling completed, taking \([0-9.]*\)s.*/\1/p' "$rlog" | tail -1)
        s_vae=$(sed -n 's/.*decode_first_stage completed, taking \([0-9.]*\)s.*/\1/p' "$rlog" | tail -1)
        [[ -n $s_unet && -n $s_vae ]] || die "timing lines not found in $rlog"
        u=$(to_ms "$s_unet") v=$(to_ms "$s_vae")
        echo "run $i ($tag): unet step (cond + uncond) ${u} ms, vae decode ${v} ms  (log: $rlog)"
        if [[ -z $BEST_UNET || $u -lt $BEST_UNET ]]; then BEST_UNET=$u; fi
        if [[ -z $BEST_VAE || $v -lt $BEST_VAE ]]; then BEST_VAE=$v; fi
    done
}

LF=$(tr '[:upper:]' '[:lower:]' <<<"$SDCPP_LLAMAFILE")
bench "$CLI" "f16conv$SUFFIX"
F16_LINE="sdcpp_vae_decode_ms=$BEST_VAE sdcpp_unet_step_ms=$BEST_UNET sdcpp_conv_weights=f16 sdcpp_llamafile=$LF"
if [[ $SDCPP_F32_CONV == 1 ]]; then
    bench "$WORK/build-f32conv$SUFFIX/bin/sd-cli" "f32conv$SUFFIX"
    F32_LINE="sdcpp_vae_decode_ms=$BEST_VAE sdcpp_unet_step_ms=$BEST_UNET sdcpp_conv_weights=f32 sdcpp_llamafile=$LF"
fi

cat <<EOF
note: stable-diffusion.cpp runs CFG as two batch-1 UNet passes (cond, then uncond) per step, so
      sdcpp_unet_step_ms = the whole 1-step "sampling completed" time = cond pass + uncond pass, which
      corresponds to our single batch-2 UNet step. Both figures include sd.cpp's per-call graph build
      and compute-buffer allocation; its log resolution is 10 ms. Min over RUNS=$RUNS runs, $THREADS threads,
      ggml built with GGML_NATIVE=ON GGML_LLAMAFILE=$SDCPP_LLAMAFILE (onnx2ggml builds its ggml with ON).
      Precision: sd.cpp keeps every Conv2d weight in F16 (converted at load, even with --type f32) and
      ggml_conv_2d im2cols the activations to F16 as well (F32 accumulation); Linear, GroupNorm and
      attention (no --fa) run in F32.$([[ $SDCPP_F32_CONV == 1 ]] && echo " The f32conv build patches that one line to F32 (F32 im2col and GEMM).")
EOF
if [[ $SDCPP_F32_CONV == 1 ]]; then echo "$F32_LINE"; fi
echo "$F16_LINE"
