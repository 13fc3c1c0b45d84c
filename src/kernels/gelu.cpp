// Exact GELU (see gelu.h): erfc from a fitted polynomial times one exp, all in 8-float vectors.
#include "kernels/gelu.h"

#include <algorithm>
#include <cstring>

#include "kernels/custom.h"
#include "kernels/vec8.h"
#include "kernels/vexp.h"

namespace o2g {

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

}  // namespace

ggml_tensor* gelu_erf_vec(Ctx& ctx, ggml_tensor* x) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 1, gelu_kernel,
                                    GGML_N_TASKS_MAX, nullptr);
    ctx.label(y, "gelu_erf");
    return y;
}

}  // namespace o2g
