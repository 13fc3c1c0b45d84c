// What both harnesses share: the scratch folder that external data resolves against, and how an input that
// asks for more memory than the cap is counted rather than reported.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include <unistd.h>

namespace fuzz {

// A folder with one 70000-byte "weights.bin", made once per process, so external-data fields can point at a
// real file (and past its end).
inline const std::string& scratch_dir() {
    static const std::string dir = [] {
        char tmpl[] = "/tmp/onnx2ggml-fuzz-XXXXXX";
        if (!mkdtemp(tmpl)) abort();
        std::string d = tmpl;
        if (FILE* f = fopen((d + "/weights.bin").c_str(), "wb")) {
            for (int i = 0; i < 70000; i++) fputc((i * 37) & 0xff, f);
            fclose(f);
        }
        static std::string cleanup = d;
        atexit([] {
            unlink((cleanup + "/weights.bin").c_str());
            rmdir(cleanup.c_str());
        });
        return d;
    }();
    return dir;
}

// fuzz.sh caps single allocations (ASAN_OPTIONS max_allocation_size_mb, allocator_may_return_null), so a model
// that declares a huge tensor throws std::bad_alloc. That is refused input, not a crash, while fuzzing; the
// regression replay (replay_main.cpp) counts them, so a reproducer of an unchecked size fails until the size
// check lands; FUZZ_STRICT_ALLOC=1 makes them a crash under libFuzzer too.
inline int bad_allocs = 0;
inline void on_bad_alloc() {
    bad_allocs++;
    static const bool strict = getenv("FUZZ_STRICT_ALLOC") && getenv("FUZZ_STRICT_ALLOC")[0] == '1';
    if (strict) {
        fprintf(stderr, "finding: std::bad_alloc escaped (an allocation sized from the model without a check)\n");
        abort();
    }
}

}  // namespace fuzz
