// Elementwise passes of our own (CPU backend only; ggml custom ops): arithmetic broadcasting either operand, and
// hard swish.
#pragma once
#include "kernels/isa.h"
#include "onnx2ggml/ops.h"

namespace o2g {

enum class ArithK { Add, Sub, Mul, Div, Max, Min };

O2G_ISA_BEGIN
// a op b over their numpy broadcast (ggml dims, modulo tiling); F32 operands.
ggml_tensor* broadcast_arith(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ArithK k);
// x * clamp(alpha x + beta, 0, 1) in one vectorized pass (ggml's hardswish is a scalar loop); F32 x.
ggml_tensor* hard_swish_cpu(Ctx& ctx, ggml_tensor* x, float alpha, float beta);

O2G_ISA_END
}  // namespace o2g
