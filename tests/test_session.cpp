// Session API: one model file run at two input shapes, and graph reuse for a repeated shape.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "onnx2ggml/onnx2ggml.h"

using namespace onnx2ggml;

static Tensor latent(int64_t h, int64_t w, unsigned seed) {
    Tensor t;
    t.dtype = DType::FLOAT;
    t.shape = {1, 4, h, w};
    t.data.resize(size_t(t.numel()) * 4);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    for (int64_t i = 0; i < t.numel(); i++) t.as<float>()[i] = nd(rng);
    return t;
}

#define CHECK(c)                                                    \
    do {                                                            \
        if (!(c)) {                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            return 1;                                               \
        }                                                           \
    } while (0)

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    SessionOptions opts;
    opts.threads = 2;
    auto s = Session::open(argv[1], opts);
    const std::string in = "latent";
    auto a1 = s->run({{in, latent(8, 8, 1)}});
    CHECK(!s->stats().cache_hit);
    CHECK(a1.size() == 1 && a1[0].shape == (std::vector<int64_t>{1, 3, 16, 16}));
    auto b = s->run({{in, latent(12, 16, 2)}});
    CHECK(!s->stats().cache_hit);
    CHECK(b[0].shape == (std::vector<int64_t>{1, 3, 24, 32}));
    auto a2 = s->run({{in, latent(8, 8, 1)}});
    CHECK(s->stats().cache_hit);
    CHECK(a2[0].data == a1[0].data);  // reused graph, same numbers
    auto a3 = s->run({{in, latent(8, 8, 3)}});
    CHECK(s->stats().cache_hit);
    CHECK(a3[0].data != a1[0].data);  // new input data reaches the cached graph
    for (int64_t i = 0; i < b[0].numel(); i++) CHECK(std::isfinite(b[0].as<float>()[i]));
    printf("session: two shapes and graph reuse ok\n");
    return 0;
}
