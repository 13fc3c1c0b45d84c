// Layout helpers: ONNX shapes (outermost first) vs ggml ne (innermost first), and broadcasting.
#include <algorithm>

#include "common/error.h"
#include "lib/host_util.h"
#include "ops/op.h"

namespace onnx2ggml {

int norm_axis(const Lower& L, int64_t axis, int rank) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        L.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return int(a);
}

void shape_to_ne(const Shape& s, int64_t ne[4]) {
    // Rank > 4: the outermost dims fold into ne[3]; ops that touch only the inner three dims still work.
    for (int i = 0; i < 4; i++) ne[i] = 1;
    int r = int(s.size());
    for (int a = 0; a < r; a++) {
        int g = std::min(r - 1 - a, 3);
        ne[g] *= s[size_t(a)];
    }
}

void shape_to_ne(const Lower& L, const Shape& s, int64_t ne[4]) { shape_to_ne(s, ne); }

// Whether a tensor of shape `from` can be tiled by ggml_repeat into `to` (numpy broadcast semantics).
static bool folded_repeat_ok(const Shape& from, const Shape& to) {
    if (to.size() <= 4) return true;
    size_t lead = to.size() - 3;
    Shape f(to.size() - from.size(), 1);
    f.insert(f.end(), from.begin(), from.end());
    // The folded leading dims of `from` must be a suffix-aligned block: ones, then equal to `to`'s.
    size_t i = 0;
    while (i < lead && f[i] == 1) i++;
    for (; i < lead; i++)
        if (f[i] != to[i]) return false;
    return true;
}

Shape ne_to_shape(const ggml_tensor* t, int rank) {
    Shape s(static_cast<size_t>(rank));
    for (int a = 0; a < rank; a++) s[size_t(a)] = t->ne[rank - 1 - a];
    return s;
}

Shape broadcast_shapes(const Lower& L, const Shape& a, const Shape& b) {
    try {
        return o2g::broadcast_shape(a, b);
    } catch (const o2g::OpError& e) {
        L.error(e.what());
    }
}

bool folded_compatible(const Shape& from, const Shape& to) { return folded_repeat_ok(from, to); }

}  // namespace onnx2ggml
