// Elementwise arithmetic broadcasting either operand in one pass (CPU backend only; a ggml custom op).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

enum class ArithK { Add, Sub, Mul, Div };

// a op b over their numpy broadcast (ggml dims, modulo tiling); F32 operands.
ggml_tensor* broadcast_arith(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ArithK k);

}  // namespace o2g
