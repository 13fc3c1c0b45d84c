// Op library: elementwise math (see include/onnx2ggml/ops/math.h).
#include "onnx2ggml/ops.h"

namespace o2g {

namespace {
using Bin = ggml_tensor* (*)(ggml_context*, ggml_tensor*, ggml_tensor*);

// ggml broadcasts only its second operand, so the first is repeated up to the common shape.
ggml_tensor* binary(Ctx& ctx, Bin fn, ggml_tensor* a, ggml_tensor* b) {
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    return fn(ctx, repeat_to(ctx, a, ne), b);
}
}  // namespace

ggml_tensor* add(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_add, a, b); }
ggml_tensor* sub(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_sub, a, b); }
ggml_tensor* mul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_mul, a, b); }
ggml_tensor* div(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_div, a, b); }

}  // namespace o2g
