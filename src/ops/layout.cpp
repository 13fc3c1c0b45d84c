// Layout helpers: ONNX shapes (outermost first) vs ggml ne (innermost first), and broadcasting.
#include "common/error.h"
#include "ops/op.h"

namespace onnx2ggml {

int norm_axis(const Lower& L, int64_t axis, int rank) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= std::max(rank, 1))
        L.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return int(a);
}

void shape_to_ne(const Lower& L, const Shape& s, int64_t ne[4]) {
    if (s.size() > 4) L.error("rank " + std::to_string(s.size()) + " tensor; ggml holds at most 4 dims");
    for (int i = 0; i < 4; i++) ne[i] = 1;
    int r = int(s.size());
    for (int a = 0; a < r; a++) ne[r - 1 - a] = s[size_t(a)];
}

Shape ne_to_shape(const ggml_tensor* t, int rank) {
    Shape s(static_cast<size_t>(rank));
    for (int a = 0; a < rank; a++) s[size_t(a)] = t->ne[rank - 1 - a];
    return s;
}

Shape broadcast_shapes(const Lower& L, const Shape& a, const Shape& b) {
    size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t i = 0; i < r; i++) {
        int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
        int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
        if (da != db && da != 1 && db != 1)
            L.error("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

ggml_tensor* broadcast_to(Lower& L, ggml_tensor* x, const Shape& from, const Shape& to) {
    int64_t ne[4];
    shape_to_ne(L, to, ne);
    bool same = true;
    for (int i = 0; i < 4; i++) same &= x->ne[i] == ne[i];
    if (same) return x;
    return ggml_repeat_4d(L.ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* reshape_to(Lower& L, ggml_tensor* x, const Shape& s) {
    int64_t ne[4];
    shape_to_ne(L, s, ne);
    if (x->ne[0] == ne[0] && x->ne[1] == ne[1] && x->ne[2] == ne[2] && x->ne[3] == ne[3]) return x;
    x = L.cont(x);
    return ggml_reshape_4d(L.ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

}  // namespace onnx2ggml
