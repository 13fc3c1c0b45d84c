#!/usr/bin/env bash
# Measures this machine's fp32 FMA peak (GFLOP/s) with a small register-blocked FMA loop per thread,
# compiled with native flags. Usage: scripts/peak_flops.sh [THREADS]
set -euo pipefail
threads=${1:-$(nproc)}
dir=$(mktemp -d)
cat > "$dir/peak.cpp" <<'CPP'
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <immintrin.h>
// 16 independent accumulators hide FMA latency; each FMA on a 16-float vector is 32 flops.
static double run(long iters) {
#if defined(__AVX512F__)
    __m512 a[16], b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(0.9999999f);
    for (auto& v : a) v = _mm512_set1_ps(1.0f);
    for (long i = 0; i < iters; i++)
        for (auto& v : a) v = _mm512_fmadd_ps(v, b, c);
    float s = 0; for (auto& v : a) s += _mm512_reduce_add_ps(v);
    if (s == 42) puts("");
    return double(iters) * 16 * 32;
#else
    __m256 a[12], b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(0.9999999f);
    for (auto& v : a) v = _mm256_set1_ps(1.0f);
    for (long i = 0; i < iters; i++)
        for (auto& v : a) v = _mm256_fmadd_ps(v, b, c);
    float t[8], s = 0; for (auto& v : a) { _mm256_storeu_ps(t, v); for (float x : t) s += x; }
    if (s == 42) puts("");
    return double(iters) * 12 * 16;
#endif
}
int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    long iters = 200000000 / 16;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    std::vector<double> f(n);
    for (int i = 0; i < n; i++) ts.emplace_back([&, i] { f[i] = run(iters); });
    for (auto& t : ts) t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), tot = 0;
    for (double x : f) tot += x;
    printf("fp32 FMA peak: %.1f GFLOP/s on %d thread(s)\n", tot / s / 1e9, n);
}
CPP
g++ -O3 -funroll-all-loops -march=native -std=c++17 -pthread "$dir/peak.cpp" -o "$dir/peak"
"$dir/peak" "$threads"
rm -rf "$dir"
