// Indexing CPU kernels (see indexing.h).
#include "kernels/indexing.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/custom.h"

namespace o2g {

namespace {

template <typename T>
T reduce(int r, T a, T b) {
    switch (r) {
        case SCATTER_ADD: return a + b;
        case SCATTER_MUL: return a * b;
        case SCATTER_MAX: return std::max(a, b);
        case SCATTER_MIN: return std::min(a, b);
        default: return b;
    }
}
struct ScatterK { int red; };
void scatter_run(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    int r = static_cast<const ScatterK*>(ud)->red;
    const ggml_tensor *d = dst->src[0], *u = dst->src[1], *o = dst->src[2];
    int64_t n = ggml_nelements(d), m = ggml_nelements(u);
    std::memcpy(dst->data, d->data, size_t(n) * 4);
    const int32_t* off = static_cast<const int32_t*>(o->data);
    if (dst->type == GGML_TYPE_F32) {
        float* y = static_cast<float*>(dst->data);
        const float* v = static_cast<const float*>(u->data);
        for (int64_t k = 0; k < m; k++) y[off[k]] = reduce(r, y[off[k]], v[k]);
    } else {
        int32_t* y = static_cast<int32_t*>(dst->data);
        const int32_t* v = static_cast<const int32_t*>(u->data);
        for (int64_t k = 0; k < m; k++) y[off[k]] = reduce(r, y[off[k]], v[k]);
    }
}

struct TopKK { int64_t K; bool largest, indices; };
void topk_run(ggml_tensor* dst, int ith, int nth, void* ud) {
    const TopKK& p = *static_cast<const TopKK*>(ud);
    const ggml_tensor* a = dst->src[0];
    int64_t n = a->ne[0], rows = ggml_nrows(a);
    int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    std::vector<int64_t> idx;
    for (int64_t r = r0; r < r1; r++) {
        const float* x = static_cast<const float*>(a->data) + r * n;
        idx.resize(size_t(n));
        std::iota(idx.begin(), idx.end(), 0);
        auto cmp = [&](int64_t i, int64_t j) {
            float a1 = x[i], b1 = x[j];
            if (a1 != b1) return p.largest ? a1 > b1 : a1 < b1;
            return i < j;
        };
        std::partial_sort(idx.begin(), idx.begin() + p.K, idx.end(), cmp);
        if (!p.indices) {
            float* y = static_cast<float*>(dst->data) + r * p.K;
            for (int64_t i = 0; i < p.K; i++) y[i] = x[idx[size_t(i)]];
        } else {
            int32_t* y = static_cast<int32_t*>(dst->data) + r * p.K;
            for (int64_t i = 0; i < p.K; i++) y[i] = int32_t(idx[size_t(i)]);
        }
    }
}

// Running product over [outer, A, inner]; integers wrap like the int64 reference.
void cumprod_run(ggml_tensor* dst, int ith, int nth, void* ud) {
    const CumKernelParams& p = *static_cast<const CumKernelParams*>(ud);
    const ggml_tensor* a = dst->src[0];
    bool is_int = a->type == GGML_TYPE_I32;
    for (int64_t line = ith; line < p.outer * p.inner; line += nth) {
        int64_t o = line / p.inner, j = line % p.inner;
        double acc = 1;
        int64_t iacc = 1;
        for (int64_t t = 0; t < p.A; t++) {
            int64_t e = (o * p.A + (p.reverse ? p.A - 1 - t : t)) * p.inner + j;
            if (is_int) {
                int32_t v = static_cast<const int32_t*>(a->data)[e];
                if (p.exclusive) static_cast<int32_t*>(dst->data)[e] = int32_t(iacc);
                iacc = int64_t(uint64_t(iacc) * uint64_t(int64_t(v)));
                if (!p.exclusive) static_cast<int32_t*>(dst->data)[e] = int32_t(iacc);
            } else {
                float v = static_cast<const float*>(a->data)[e];
                if (p.exclusive) static_cast<float*>(dst->data)[e] = float(acc);
                acc *= v;
                if (!p.exclusive) static_cast<float*>(dst->data)[e] = float(acc);
            }
        }
    }
}

struct PlaceK { bool add; };
void place_run(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    bool add = static_cast<const PlaceK*>(ud)->add;
    const ggml_tensor *x = dst->src[0], *o = dst->src[1];
    int64_t n = ggml_nelements(x);
    std::memset(dst->data, 0, ggml_nbytes(dst));
    const int32_t* off = static_cast<const int32_t*>(o->data);
    for (int64_t k = 0; k < n; k++) {
        int32_t v = off[k];
        if (v < 0) continue;
        if (dst->type == GGML_TYPE_F32) {
            float* y = static_cast<float*>(dst->data);
            y[v] = add ? y[v] + static_cast<const float*>(x->data)[k] : static_cast<const float*>(x->data)[k];
        } else {
            int32_t* y = static_cast<int32_t*>(dst->data);
            y[v] = add ? y[v] + static_cast<const int32_t*>(x->data)[k] : static_cast<const int32_t*>(x->data)[k];
        }
    }
}

}  // namespace

ggml_tensor* scatter_kernel(Ctx& ctx, ggml_tensor* d, ggml_tensor* u, ggml_tensor* off, int reduce) {
    ggml_tensor* args[3] = {d, u, off};
    return ggml_custom_4d(ctx, d->type, d->ne[0], d->ne[1], d->ne[2], d->ne[3], args, 3, scatter_run, 1,
                          keep_params(ScatterK{reduce}));
}

ggml_tensor* topk_kernel(Ctx& ctx, ggml_tensor* x, int64_t K, bool largest, bool indices) {
    ggml_tensor* args[1] = {x};
    return ggml_custom_4d(ctx, indices ? GGML_TYPE_I32 : GGML_TYPE_F32, K, x->ne[1], x->ne[2], x->ne[3], args, 1,
                          topk_run, GGML_N_TASKS_MAX, keep_params(TopKK{K, largest, indices}));
}

ggml_tensor* cumprod_kernel(Ctx& ctx, ggml_tensor* x, const CumKernelParams& p) {
    ggml_tensor* args[1] = {x};
    return ggml_custom_4d(ctx, x->type, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 1, cumprod_run, GGML_N_TASKS_MAX,
                          keep_params(p));
}

ggml_tensor* place_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* off, const int64_t ne[4], bool add) {
    ggml_tensor* args[2] = {x, off};
    return ggml_custom_4d(ctx, x->type, ne[0], ne[1], ne[2], ne[3], args, 2, place_run, 1, keep_params(PlaceK{add}));
}

}  // namespace o2g
