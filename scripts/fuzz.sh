#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang-14 (ASan + UBSan + coverage on the onnx2ggml
# libraries) into build-fuzz, replays tests/fuzz/regressions, then fuzzes each harness from a seed corpus made
# of the committed models and the op-test models. Prints executions per harness; exits nonzero on any finding
# (crash, leak, timeout over 10 s, sanitizer report), whose input is saved under build-fuzz/work/findings.
# The same build also makes the CLI and test_proto_fuzz under ASan + UBSan, which scripts/test.sh's hostile-input
# tests run (one sanitizer build of the library, not two).
# Usage: scripts/fuzz.sh [--ci | --build-only | HOURS]
#   --build-only  build the harnesses, build-fuzz/onnx2ggml and build-fuzz/test_proto_fuzz, then stop
#   --ci    about 40 s per harness (what scripts/test.sh runs): a fixed seed and a fixed number of runs. The
#           regression replay and the seed corpus (every seed runs once) fail the step; a finding of the mutation
#           walk after that is printed (with its input, when small) but does not: the walk differs between two runs
#           of the same binary (coverage of the same seeds varies by a few edges), so it cannot gate a submission.
#   HOURS   fuzzing time per harness (default 1); the harnesses run one after the other
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=3600
CI_MODE=0
case "${1:-}" in
  --ci) SECONDS_EACH=90; CI_MODE=1 ;;
  --build-only) CI_MODE=2 ;;
  "") ;;
  *) SECONDS_EACH=$(python3 -c "import sys; print(max(1, int(float(sys.argv[1]) * 3600)))" "$1") ;;
esac
HARNESSES="${FUZZ_HARNESSES:-loader session pickle}"

# clang-14 with its fuzzer runtime (Debian bookworm packages).
if ! command -v clang++-14 >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "run: sudo apt-get install -y clang-14 libclang-rt-14-dev" >&2; exit 1; }
  apt-get update -q && apt-get install -y -q --no-install-recommends clang-14 libclang-rt-14-dev
fi
[ -f .deps/ggml-install/lib/cmake/ggml/ggml-config.cmake ] || scripts/setup.sh

launcher=()
if command -v ccache >/dev/null; then  # objects shared with other clones and worktrees
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$PWD")}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Unity batches: the instrumented build's cold compile is most of this step's time on CI. (-O1 saves a fifth of
# it, but a committed slow input, the 16 M-bin DFT, then passes 10 s on a loaded 2-core machine.)
# Our kernels at one fixed ISA level (x86-64-v3, AVX2), not -march=native: the instrumented code is then the same on
# every machine (native builds took CI's fixed seed elsewhere than a replay here; seed-folder order still varies).
# FUZZ_KERNEL_ARCH=native fuzzes this machine's own paths (AVX-512 where it has them).
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNX2GGML_FUZZ=ON \
  -DONNX2GGML_TESTS=OFF -DONNX2GGML_UNITY=ON -DONNX2GGML_NATIVE=ON -DONNX2GGML_KERNEL_ARCH="${FUZZ_KERNEL_ARCH:-x86-64-v3}" \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/ggml-install" "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_loader fuzz_session fuzz_pickle onnx2ggml_cli test_proto_fuzz >/dev/null
[ $CI_MODE = 2 ] && exit 0

# Seed corpus, rebuilt from committed files each time (kept between runs in build-fuzz/work, never committed):
# the committed models up to 400 KB (up to 64 KB for the session harness, whose runs must stay well under the
# 10 s timeout), and each op test's one-node model.
WORK=build-fuzz/work
mkdir -p "$WORK/seeds/ops" "$WORK/seeds/models" "$WORK/seeds/small" "$WORK/seeds/ckpt" "$WORK/findings"
# The torch.save reader: the hostile .ckpt fixtures and small torch.save files (the big twin is left out).
cp tests/models/checkpoint/hostile/*.ckpt "$WORK/seeds/ckpt/"
find examples tests/models -name '*.onnx' -size -400k -exec cp {} "$WORK/seeds/models/" \;
find examples tests/models -name '*.onnx' -size -64k -exec cp {} "$WORK/seeds/small/" \;
if [ -x .venv/bin/python ] && [ ! -f "$WORK/seeds/ops/.done" ]; then
  .venv/bin/python - "$WORK/seeds/ops" <<'PY'
import sys
sys.path.insert(0, "tests")
import onnx, op_tests
for c in op_tests.CASES:
    try:
        m = op_tests.build_model(c, op_tests.make_inputs(c))
    except Exception:
        continue
    onnx.save(m, f"{sys.argv[1]}/{c.id.replace('#', '_')}.onnx")
PY
  touch "$WORK/seeds/ops/.done"
fi
seeds_loader=("$WORK/seeds/ops" "$WORK/seeds/models")
seeds_session=("$WORK/seeds/ops" "$WORK/seeds/small")
seeds_pickle=("$WORK/seeds/ckpt")
echo "fuzz: $(ls "$WORK/seeds/ops" | wc -l) op-test models and $(ls "$WORK/seeds/models" | wc -l) committed models as seeds, $([ $CI_MODE = 1 ] && echo "fixed seed and runs" || echo "${SECONDS_EACH} s") per harness"

# Single allocations above 1 GiB fail (std::bad_alloc, counted as refused input; wt-limits' size checks turn
# them into errors); resident memory above 2.5 GiB is a finding.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=1024:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for h in $HARNESSES; do
  bin=build-fuzz/tests/fuzz/fuzz_$h
  # The committed findings first: each must now be handled without a report.
  regs=(tests/fuzz/regressions/$h/*)
  if [ -e "${regs[0]}" ]; then
    # 120 s, not the walk's 10: the replay asks that each input is handled (the 16 M-bin DFT took 46 s in an -O1
    # build on a loaded 2-core machine); a slow input is for the walk and the benchmarks to find.
    if ! "$bin" -timeout=120 -rss_limit_mb=2560 "${regs[@]}" >"$WORK/replay_$h.log" 2>&1; then
      echo "FAILED: fuzz_$h on tests/fuzz/regressions/$h (see $WORK/replay_$h.log)"; status=1
    else
      echo "fuzz_$h: ${#regs[@]} regression inputs replayed, no finding"
    fi
  fi
  corpus="$WORK/corpus_$h"
  [ $CI_MODE = 1 ] && { corpus="$WORK/corpus_ci_$h"; rm -rf "$corpus" "$WORK/findings/${h}-"*; }  # from the seeds alone
  mkdir -p "$corpus"
  log="$WORK/fuzz_$h.log"
  start=$(date +%s)
  rc=0
  seeds="seeds_$h[@]"
  fixed=()
  # Runs that take about 40 s on a 2-core EPYC (loader about 7k exec/s, pickle 24k, session about 300 after its
  # 1080 seeds); the time limit is a backstop.
  [ $CI_MODE = 1 ] && fixed=(-seed=1 "-runs=$(case $h in loader) echo 250000 ;; pickle) echo 1000000 ;; *) echo 10000 ;; esac)")
  "$bin" "${fixed[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$WORK/findings/${h}-" "$corpus" "${!seeds}" >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log" | tail -1)
  execs=${execs:-0}
  echo "fuzz_$h: $execs executions in ${secs} s ($(( execs / (secs > 0 ? secs : 1) )) exec/s), corpus $(ls "$corpus" | wc -l) inputs"
  if [ $rc -ne 0 ]; then
    if [ $CI_MODE = 1 ] && grep -q "INITED" "$log"; then
      echo "NEW FINDING in fuzz_$h's mutation walk (exit $rc; reported, not failing --ci), log $log:"
    else
      echo "FINDING in fuzz_$h (exit $rc), log $log:"
      status=1
    fi
    grep -m1 -E "ERROR|runtime error|deadly signal|timeout|out-of-memory|leak" "$log" || tail -5 "$log"
    for f in "$WORK/findings/${h}-"*; do
      [ -e "$f" ] || continue
      echo "  input: $f ($(stat -c %s "$f") bytes)"
      # Small inputs go into the log, so a CI-only finding can be replayed: base64 -d > x.onnx
      [ "$(stat -c %s "$f")" -le 3072 ] && { echo "  base64:"; base64 -w 0 "$f"; echo; }
    done
  fi
done
exit $status
