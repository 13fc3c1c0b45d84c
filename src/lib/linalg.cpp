// Op library: linear algebra (see include/onnx2ggml/ops/linalg.h).
#include <string>

#include "kernels/linalg.h"

namespace o2g {

ggml_tensor* det(Ctx& ctx, ggml_tensor* x) {
    int64_t M = x->ne[0];
    if (x->ne[1] != M) throw OpError("input must be [M, M, ...], not ne [" + std::to_string(x->ne[0]) + ", " +
                                     std::to_string(x->ne[1]) + ", ...]");
    if (M == 0) throw OpError("empty matrices are not supported");
    int64_t nb = x->ne[2] * x->ne[3];
    if (nb == 0) throw OpError("the output would be empty, which ggml cannot hold");
    x = cont(ctx, x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(ctx, x, GGML_TYPE_F32);
    ggml_tensor* args[1] = {ggml_reshape_2d(ctx, x, M, M * nb)};
    ggml_tensor* d = ggml_custom_4d(ctx, GGML_TYPE_F32, nb, 1, 1, 1, args, 1, det_kernel, GGML_N_TASKS_MAX, nullptr);
    if (x->ne[3] == 1) return d;
    return ggml_reshape_2d(ctx, d, x->ne[2], x->ne[3]);
}

}  // namespace o2g
