// Elementwise passes ggml has no fast form of. Arithmetic with numpy broadcasting of either operand, in one pass: ggml broadcasts only its second
// operand (the first would be materialized by ggml_repeat), and for a second operand broadcast along ne0 (a
// scalar, a per-channel [1, 1, C, 1]) it calls its row kernel once per element. Built with native flags.
#include "kernels/isa.h"
#include "kernels/elementwise.h"

#include <algorithm>

#include "kernels/custom.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

struct Params { ArithK k; };

template <ArithK K>
inline float arith(float a, float b) {
    if constexpr (K == ArithK::Add) return a + b;
    else if constexpr (K == ArithK::Sub) return a - b;
    else if constexpr (K == ArithK::Mul) return a * b;
    else if constexpr (K == ArithK::Div) return a / b;
    else if (a != a || b != b) return a + b;  // Max and Min propagate NaN (ONNX), as a + b does
    else if constexpr (K == ArithK::Max) return a > b ? a : b;
    else return a < b ? a : b;
}

// One output row of n: a and b each either a full row (step 1) or one value repeated (step 0).
template <ArithK K>
void row(float* __restrict y, const float* __restrict a, const float* __restrict b, int64_t n, bool a_full,
         bool b_full) {
    if (a_full && b_full)
        for (int64_t i = 0; i < n; i++) y[i] = arith<K>(a[i], b[i]);
    else if (a_full) {
        const float s = b[0];
        for (int64_t i = 0; i < n; i++) y[i] = arith<K>(a[i], s);
    } else if (b_full) {
        const float s = a[0];
        for (int64_t i = 0; i < n; i++) y[i] = arith<K>(s, b[i]);
    } else {
        const float s = arith<K>(a[0], b[0]);
        for (int64_t i = 0; i < n; i++) y[i] = s;
    }
}

// A row whose operand tiles with a period other than 1 or n (ggml's modulo rule for folded ranks above 4).
template <ArithK K>
void row_tiled(float* y, const float* a, const float* b, int64_t n, int64_t na, int64_t nb) {
    for (int64_t i = 0; i < n; i++) y[i] = arith<K>(a[i % na], b[i % nb]);
}

template <ArithK K>
void run(ggml_tensor* dst, const ggml_tensor* a, const ggml_tensor* b, int ith, int nth) {
    const int64_t n0 = dst->ne[0], n1 = dst->ne[1], n2 = dst->ne[2], n3 = dst->ne[3];
    const int64_t rows = n1 * n2 * n3;
    const bool simple = (a->ne[0] == n0 || a->ne[0] == 1) && (b->ne[0] == n0 || b->ne[0] == 1);
    // Few long rows (a scalar times an image) split within rows; otherwise whole rows per thread.
    const int64_t chunks = rows >= nth ? 1 : std::max<int64_t>(1, std::min<int64_t>(nth, n0 / 4096));
    const WorkSpan s = work_span(rows * chunks, ith, nth);
    for (int64_t w = s.b; w < s.e; w++) {
        const int64_t r = w / chunks, c = w % chunks;
        const int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
        const char* pa = static_cast<const char*>(a->data) + (i1 % a->ne[1]) * a->nb[1] + (i2 % a->ne[2]) * a->nb[2] +
                         (i3 % a->ne[3]) * a->nb[3];
        const char* pb = static_cast<const char*>(b->data) + (i1 % b->ne[1]) * b->nb[1] + (i2 % b->ne[2]) * b->nb[2] +
                         (i3 % b->ne[3]) * b->nb[3];
        float* py = reinterpret_cast<float*>(static_cast<char*>(dst->data) + i1 * dst->nb[1] + i2 * dst->nb[2] +
                                             i3 * dst->nb[3]);
        const float* fa = reinterpret_cast<const float*>(pa);
        const float* fb = reinterpret_cast<const float*>(pb);
        if (!simple) {
            row_tiled<K>(py, fa, fb, n0, a->ne[0], b->ne[0]);
            continue;
        }
        const WorkSpan part = work_span(n0, int(c), int(chunks));
        const bool af = a->ne[0] == n0 && n0 > 1, bf = b->ne[0] == n0 && n0 > 1;
        row<K>(py + part.b, fa + (af ? part.b : 0), fb + (bf ? part.b : 0), part.e - part.b, af || n0 == 1,
               bf || n0 == 1);
    }
}

void kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const ggml_tensor* a = dst->src[0];
    const ggml_tensor* b = dst->src[1];
    switch (static_cast<const Params*>(ud)->k) {
        case ArithK::Add: return run<ArithK::Add>(dst, a, b, ith, nth);
        case ArithK::Sub: return run<ArithK::Sub>(dst, a, b, ith, nth);
        case ArithK::Mul: return run<ArithK::Mul>(dst, a, b, ith, nth);
        case ArithK::Div: return run<ArithK::Div>(dst, a, b, ith, nth);
        case ArithK::Max: return run<ArithK::Max>(dst, a, b, ith, nth);
        case ArithK::Min: return run<ArithK::Min>(dst, a, b, ith, nth);
    }
}

const char* label(ArithK k) {
    switch (k) {
        case ArithK::Add: return "add_bcast";
        case ArithK::Sub: return "sub_bcast";
        case ArithK::Mul: return "mul_bcast";
        case ArithK::Div: return "div_bcast";
        case ArithK::Max: return "max_bcast";
        case ArithK::Min: return "min_bcast";
    }
    return "bcast";
}

struct HardSwishParams { float alpha, beta; };

// x * clamp(alpha x + beta, 0, 1); ONNX's 1/6, 1/2 as (x + 3) / 6, the bits of relu6(x + 3) / 6 written out.
void hard_swish_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const HardSwishParams p = *static_cast<const HardSwishParams*>(ud);
    const float* __restrict x = static_cast<const float*>(dst->src[0]->data);
    float* __restrict y = static_cast<float*>(dst->data);
    const WorkSpan s = work_span(ggml_nelements(dst), ith, nth);
    if (p.alpha == 1.0f / 6.0f && p.beta == 0.5f) {
        for (int64_t i = s.b; i < s.e; i++) y[i] = x[i] * std::min(1.0f, std::max(0.0f, (x[i] + 3.0f) / 6.0f));
        return;
    }
    for (int64_t i = s.b; i < s.e; i++) y[i] = x[i] * std::min(1.0f, std::max(0.0f, p.alpha * x[i] + p.beta));
}

}  // namespace

ggml_tensor* hard_swish_cpu(Ctx& ctx, ggml_tensor* x, float alpha, float beta) {
    ggml_tensor* args[1] = {cont(ctx, x)};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 1,
                                    hard_swish_kernel, GGML_N_TASKS_MAX, keep_params(HardSwishParams{alpha, beta}));
    ctx.label(y, "hard_swish");
    return y;
}

ggml_tensor* broadcast_arith(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ArithK k) {
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    // Rows are read with unit stride inside ne0.
    if (a->nb[0] != sizeof(float)) a = ggml_cont(ctx, a);
    if (b->nb[0] != sizeof(float)) b = ggml_cont(ctx, b);
    ggml_tensor* args[2] = {a, b};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3], args, 2, kernel, GGML_N_TASKS_MAX,
                                    keep_params(Params{k}));
    ctx.label(y, label(k));
    return y;
}

O2G_ISA_END
}  // namespace o2g
