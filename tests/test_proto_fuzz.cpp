// Mutation fuzz test of the ONNX loader: corrupted and truncated copies of a real model must either
// parse or raise onnx2ggml::Error — never crash, hang or read out of bounds (run under ASan in CI).
#include <cstdio>
#include <cstring>
#include <memory>
#include <fstream>
#include <random>
#include <vector>

#include "common/error.h"
#include "ir/ir.h"

using namespace onnx2ggml;

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_proto_fuzz MODEL.onnx [iterations]\n");
        return 2;
    }
    std::ifstream f(argv[1], std::ios::binary);
    std::vector<uint8_t> orig((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (orig.size() < 16) {
        fprintf(stderr, "model too small\n");
        return 2;
    }
    int iters = argc > 2 ? atoi(argv[2]) : 3000;
    std::mt19937_64 rng(12345);
    int parsed = 0, rejected = 0;
    // The unmodified model must parse, or the test proves nothing.
    parse_model(orig.data(), orig.size(), argv[1], "/nonexistent", nullptr);
    for (int it = 0; it < iters; it++) {
        std::vector<uint8_t> buf = orig;
        switch (it % 4) {
            case 0: buf.resize(rng() % buf.size()); break;                    // truncate
            case 1: for (int k = 0; k < 8; k++) buf[rng() % buf.size()] = uint8_t(rng()); break;  // flip bytes
            case 2: {                                                           // splice a random chunk
                size_t a = rng() % buf.size(), b = rng() % buf.size(), n = rng() % 64;
                for (size_t k = 0; k < n && a + k < buf.size() && b + k < buf.size(); k++) buf[a + k] = buf[b + k];
                break;
            }
            default: for (size_t k = 0; k < std::min<size_t>(buf.size(), 256); k++) buf[k] = uint8_t(rng());  // garbage head
        }
        // Copy to an exact-size heap buffer so ASan catches any read past the end.
        std::unique_ptr<uint8_t[]> exact(new uint8_t[buf.size() ? buf.size() : 1]);
        if (!buf.empty()) std::memcpy(exact.get(), buf.data(), buf.size());
        try {
            auto m = parse_model(exact.get(), buf.size(), "fuzz.onnx", "/nonexistent", nullptr);
            parsed++;
        } catch (const Error&) {
            rejected++;
        }
    }
    printf("proto fuzz: %d iterations, %d parsed, %d rejected with an error, no crash\n", iters, parsed, rejected);
    return rejected > 0 ? 0 : 1;  // corrupted inputs must be rejected at least sometimes
}
