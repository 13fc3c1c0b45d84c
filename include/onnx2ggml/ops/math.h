// Op library, Elementwise math: binary arithmetic with numpy broadcasting, unary math, comparisons, logic, Where.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

// a (+ - * /) b with numpy broadcasting (either side may broadcast).
ggml_tensor* add(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* sub(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* mul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* div(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);

}  // namespace o2g
