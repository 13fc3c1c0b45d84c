// Sessions and threads: two sessions on two threads, one session called from several threads at once (graphs
// built for new shapes while others run), and sessions opened concurrently; every output must equal, bit for bit,
// that of a session used from one thread. Run under ThreadSanitizer by scripts/test.sh.
// Usage: test_concurrency MODEL [threads per session, default 2] [rounds, default 6]
// MODEL has one input "latent" [1, 4, h, w] with h and w free (tests/models/vae_decoder_like.onnx).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "onnx2ggml/ir.h"
#include "onnx2ggml/onnx2ggml.h"

using namespace onnx2ggml;

namespace {

struct Case {
    int64_t h, w;
    unsigned seed;
};
// Three shapes, so a caller often finds no graph built yet for its shape; two cases share a shape.
const std::vector<Case> kCases = {{8, 8, 1}, {12, 16, 2}, {8, 12, 3}, {8, 8, 4}};

Tensor latent(const Case& c) {
    Tensor t;
    t.dtype = DType::FLOAT;
    t.shape = {1, 4, c.h, c.w};
    t.data.resize(size_t(t.numel()) * 4);
    std::mt19937 rng(c.seed);
    std::normal_distribution<float> nd;
    for (int64_t i = 0; i < t.numel(); i++) t.as<float>()[i] = nd(rng);
    return t;
}

std::string g_model;
int g_threads = 2;
std::vector<std::vector<uint8_t>> g_expected;  // per case, from one session on one thread
std::atomic<int> g_failures{0};

SessionOptions options() {
    SessionOptions o;
    o.threads = g_threads;
    o.quiet = true;
    return o;
}

// Runs case k on s and counts a failure unless the output is the expected one, byte for byte.
void check_case(Session& s, size_t k, const char* what) {
    try {
        auto out = s.run({{"latent", latent(kCases[k])}});
        if (out.size() != 1 || out[0].data != g_expected[k]) {
            fprintf(stderr, "%s: case %zu: output differs from the single-threaded run\n", what, k);
            g_failures++;
        }
    } catch (const std::exception& e) {
        fprintf(stderr, "%s: case %zu: %s\n", what, k, e.what());
        g_failures++;
    }
}

template <typename F>
void on_threads(int n, F body) {
    std::vector<std::thread> ts;
    for (int i = 0; i < n; i++) ts.emplace_back(body, i);
    for (auto& t : ts) t.join();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_concurrency MODEL [threads per session] [rounds]\n");
        return 2;
    }
    g_model = argv[1];
    if (argc > 2) g_threads = atoi(argv[2]);
    int rounds = argc > 3 ? atoi(argv[3]) : 6;

    // First of all, sessions opened at once (the process's first: ggml's registry is loaded then), from the file
    // and from one shared Model, each run once; compared below, once the reference exists.
    std::vector<std::vector<uint8_t>> opened(4);
    {
        auto model = load_model(g_model);
        on_threads(4, [&](int t) {
            try {
                auto s = t % 2 ? Session::open(model, options()) : Session::open(g_model, options());
                opened[size_t(t)] = s->run({{"latent", latent(kCases[size_t(t)])}})[0].data;
            } catch (const std::exception& e) {
                fprintf(stderr, "concurrent open: %s\n", e.what());
                g_failures++;
            }
        });
    }
    {
        auto ref = Session::open(g_model, options());
        for (const Case& c : kCases) g_expected.push_back(ref->run({{"latent", latent(c)}})[0].data);
    }
    for (size_t t = 0; t < opened.size(); t++)
        if (opened[t] != g_expected[t]) {
            fprintf(stderr, "concurrent open: case %zu: output differs from the single-threaded run\n", t);
            g_failures++;
        }
    if (g_expected[0] == g_expected[3]) {  // else a stale input could pass for a fresh one
        fprintf(stderr, "cases 0 and 3 give the same output\n");
        return 1;
    }

    // Two sessions, each on its own thread, each cycling through the shapes from a different start.
    {
        auto a = Session::open(g_model, options());
        auto b = Session::open(g_model, options());
        Session* ss[2] = {a.get(), b.get()};
        on_threads(2, [&](int t) {
            for (int r = 0; r < rounds; r++) check_case(*ss[t], size_t(r + 2 * t) % kCases.size(), "two sessions");
        });
    }

    // One session, three threads at once: runs wait for each other, and a shape's first call builds its graph
    // while the other threads hold or wait for cached ones.
    {
        auto s = Session::open(g_model, options());
        on_threads(3, [&](int t) {
            for (int r = 0; r < rounds; r++) check_case(*s, size_t(r + t) % kCases.size(), "one session");
        });
        on_threads(3, [&](int) {  // and all at one shape
            for (int r = 0; r < rounds; r++) check_case(*s, 1, "one session, one shape");
        });
    }

    if (g_failures) {
        fprintf(stderr, "concurrency: %d failures\n", g_failures.load());
        return 1;
    }
    printf("concurrency: two sessions, one session on three threads, concurrent opens ok (%d rounds)\n", rounds);
    return 0;
}
