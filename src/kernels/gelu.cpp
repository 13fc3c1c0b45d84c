// Exact GELU (see gelu.h): erfc from a fitted polynomial times one exp, all in 8-float vectors.
#include "kernels/isa.h"
#include "kernels/gelu.h"

#include <algorithm>
#include <cstring>

#include "kernels/custom.h"
#include "kernels/vec8.h"
#include "kernels/vexp.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

typedef int32_t v8i __attribute__((vector_size(32)));

inline v8 gelu8(v8 x) {
    const v8 z = x * 0.70710678118654752f;
    const v8 a = z < 0 ? -z : z;
    const v8 t = 1.0f / (1.0f + 0.5f * a);
    v8 p = v8{} + 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    const v8 erfc_a = t * exp_nonpos<v8, v8i>(p - a * a);  // erfc(|z|); the argument is at most ~3e-8
    const v8 one_plus_erf = z >= 0 ? 2.0f - erfc_a : erfc_a;  // a NaN compares false: erfc_a, NaN too
    return 0.5f * x * one_plus_erf;
}

void gelu_kernel(ggml_tensor* dst, int ith, int nth, void*) {
    const float* x = static_cast<const float*>(dst->src[0]->data);
    float* y = static_cast<float*>(dst->data);
    const int64_t n = ggml_nelements(dst), blocks = (n + 63) / 64;
    const WorkSpan s = work_span(blocks, ith, nth);
    const int64_t b = s.b * 64, e = std::min(n, s.e * 64);
    int64_t i = b;
    for (; i + 8 <= e; i += 8) {
        const v8 v = gelu8(load8(x + i));
        std::memcpy(y + i, &v, sizeof v);
    }
    if (i < e) {  // the last few: through a padded vector
        float in[8] = {}, out[8];
        std::copy(x + i, x + e, in);
        const v8 v = gelu8(load8(in));
        std::memcpy(out, &v, sizeof v);
        std::copy(out, out + (e - i), y + i);
    }
}

// y = a * gelu(g), rows of a and g read through their strides (the halves of a GEGLU projection are views).
void mul_gelu_kernel(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* a = dst->src[0];
    const ggml_tensor* g = dst->src[1];
    const int64_t n0 = dst->ne[0], rows = ggml_nrows(dst), per_row = (n0 + 63) / 64;
    const WorkSpan s = work_span(rows * per_row, ith, nth);  // 64-float pieces: few rows still split
    for (int64_t w = s.b; w < s.e; w++) {
        const int64_t r = w / per_row, i1 = r % dst->ne[1], i2 = r / dst->ne[1] % dst->ne[2], i3 = r / dst->ne[1] / dst->ne[2];
        const int64_t b = w % per_row * 64, e = std::min(n0, b + 64);
        auto row = [&](const ggml_tensor* t) {
            return reinterpret_cast<const float*>(static_cast<const char*>(t->data) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
        };
        const float *pa = row(a), *pg = row(g);
        float* y = reinterpret_cast<float*>(static_cast<char*>(dst->data) + i1 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]);
        int64_t i = b;
        for (; i + 8 <= e; i += 8) {
            const v8 v = load8(pa + i) * gelu8(load8(pg + i));
            std::memcpy(y + i, &v, sizeof v);
        }
        for (; i < e; i++) {
            float in[8] = {pg[i]}, out[8];
            const v8 v = gelu8(load8(in));
            std::memcpy(out, &v, sizeof v);
            y[i] = pa[i] * out[0];
        }
    }
}

bool rows_contiguous(const ggml_tensor* t) { return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float); }

// A copy made only to have contiguous rows is not needed here: its source is read in place.
ggml_tensor* uncopied(ggml_tensor* t) {
    return t->op == GGML_OP_CONT && rows_contiguous(t->src[0]) && ggml_are_same_shape(t, t->src[0]) ? t->src[0] : t;
}

}  // namespace

ggml_tensor* gelu_erf_input(ggml_tensor* y) {
    if (y->op != GGML_OP_CUSTOM) return nullptr;
    ggml_custom_op_t fn;
    std::memcpy(&fn, y->op_params, sizeof fn);  // ggml keeps the custom op's function first in its params
    if (fn != gelu_kernel) return nullptr;
    return uncopied(y->src[0]);
}

ggml_tensor* mul_gelu_vec(Ctx& ctx, ggml_tensor* a, ggml_tensor* g) {
    a = rows_contiguous(a) ? uncopied(a) : cont(ctx, a);
    g = rows_contiguous(g) ? uncopied(g) : cont(ctx, g);
    ggml_tensor* args[2] = {a, g};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, a->ne[0], a->ne[1], a->ne[2], a->ne[3], args, 2,
                                    mul_gelu_kernel, GGML_N_TASKS_MAX, nullptr);
    ctx.label(y, "mul_gelu");
    return y;
}

ggml_tensor* gelu_erf_vec(Ctx& ctx, ggml_tensor* x) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 1, gelu_kernel,
                                    GGML_N_TASKS_MAX, nullptr);
    ctx.label(y, "gelu_erf");
    return y;
}

O2G_ISA_END
}  // namespace o2g
