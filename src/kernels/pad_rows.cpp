// Row padding CPU kernel: a memcpy per row (ggml_pad is an element-by-element loop).
#include <algorithm>
#include <cstring>

#include "kernels/pad_rows.h"

namespace o2g {

namespace {

// Rows of src (contiguous) copied into the wider rows of dst, zero-filled.
void pad_rows_compute(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* src = dst->src[0];
    const int64_t n = src->ne[0], m = dst->ne[0], rows = ggml_nrows(dst);
    const int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    for (int64_t r = r0; r < r1; r++) {
        float* d = static_cast<float*>(dst->data) + r * m;
        std::memcpy(d, static_cast<const float*>(src->data) + r * n, sizeof(float) * size_t(n));
        std::memset(d + n, 0, sizeof(float) * size_t(m - n));
    }
}

}  // namespace

ggml_tensor* pad_rows(Ctx& ctx, ggml_tensor* x, int64_t pad) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0] + pad, x->ne[1], x->ne[2], x->ne[3], args, 1,
                                    pad_rows_compute, GGML_N_TASKS_MAX, nullptr);
    ctx.label(y, "pad_rows");
    return y;
}

}  // namespace o2g
