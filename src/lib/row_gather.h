// Shared by the movement and indexing op libraries: ONNX shapes read back from ne, and gathers of whole rows
// through index tables computed when the graph is built (uploaded as I32 constants).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// x's ONNX shape (outermost first) for ONNX rank `rank` <= 4; OpError for larger ranks.
Ints onnx_shape(const ggml_tensor* x, int rank, const char* op);
// ggml ne of an ONNX shape; rank > 4 folds the outer dims into ne[3].
void fold_ne(const Ints& s, int64_t ne[4]);
int64_t prod(const Ints& s);
// x with ggml dim g replaced by the entries idx (in range) of that dim.
ggml_tensor* gather_dim(Ctx& ctx, ggml_tensor* x, int g, const Ints& idx);
// x viewed as rows of `inner` elements; output row k is row rows[k] (-1: a row of zeros), reshaped to ne.
ggml_tensor* take_rows(Ctx& ctx, ggml_tensor* x, int64_t inner, const Ints& rows, const int64_t ne[4]);
// Row-major strides of an ONNX shape.
Ints strides(const Ints& s);
// An ONNX index in [-n, n) as one in [0, n); OpError naming `op` otherwise.
int64_t wrap_index(int64_t v, int64_t n, const char* op);

}  // namespace o2g
