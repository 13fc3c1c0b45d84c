// Row gathers and ONNX-shape helpers for the movement and indexing op libraries (see row_gather.h).
#include "lib/row_gather.h"

#include <algorithm>
#include <string>

namespace o2g {

Ints onnx_shape(const ggml_tensor* x, int rank, const char* op) {
    if (rank > 4) throw OpError(std::string(op) + ": rank " + std::to_string(rank) + " input (ggml holds 4 dims)");
    Ints s(size_t(std::max(rank, 0)));
    for (int a = 0; a < rank; a++) s[size_t(a)] = x->ne[rank - 1 - a];
    for (int d = std::max(rank, 0); d < 4; d++)
        if (x->ne[d] != 1)
            throw OpError(std::string(op) + ": tensor has more dims than its rank " + std::to_string(rank));
    return s;
}

void fold_ne(const Ints& s, int64_t ne[4]) {
    for (int i = 0; i < 4; i++) ne[i] = 1;
    int r = int(s.size());
    for (int a = 0; a < r; a++) ne[std::min(r - 1 - a, 3)] *= s[size_t(a)];
}

int64_t prod(const Ints& s) {
    int64_t p = 1;
    for (int64_t v : s) p *= v;
    return p;
}

Ints strides(const Ints& s) {
    Ints st(s.size(), 1);
    for (int i = int(s.size()) - 2; i >= 0; i--) st[size_t(i)] = st[size_t(i) + 1] * s[size_t(i) + 1];
    return st;
}

int64_t wrap_index(int64_t v, int64_t n, const char* op) {
    if (v < -n || v >= n)
        throw OpError(std::string(op) + ": index " + std::to_string(v) + " out of range for a dim of " + std::to_string(n));
    return v < 0 ? v + n : v;
}

ggml_tensor* gather_dim(Ctx& ctx, ggml_tensor* x, int g, const Ints& idx) {
    int64_t inner = 1, outer = 1, A = x->ne[g], n = int64_t(idx.size());
    for (int d = 0; d < g; d++) inner *= x->ne[d];
    for (int d = g + 1; d < 4; d++) outer *= x->ne[d];
    for (int64_t v : idx)
        if (v < 0 || v >= A) throw OpError("index " + std::to_string(v) + " out of range [0, " + std::to_string(A) + ")");
    int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    ne[g] = n;
    ggml_tensor* x3 = ggml_reshape_3d(ctx, cont(ctx, x), inner, A, outer);
    std::vector<int32_t> table(size_t(n * outer));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++) table[size_t(o * n + j)] = int32_t(idx[size_t(j)]);
    const int64_t tne[4] = {n, outer, 1, 1};
    ggml_tensor* t = ctx.constant(GGML_TYPE_I32, tne, table.data(), table.size() * 4);
    return reshape_ne(ctx, ggml_get_rows(ctx, x3, t), ne);  // [inner, n, outer]
}

ggml_tensor* take_rows(Ctx& ctx, ggml_tensor* x, int64_t inner, const Ints& rows, const int64_t ne[4]) {
    int64_t n = inner ? ggml_nelements(x) / inner : 0;
    ggml_tensor* x2 = ggml_reshape_2d(ctx, cont(ctx, x), inner, n);
    bool zero = std::find(rows.begin(), rows.end(), int64_t(-1)) != rows.end();
    if (zero) {
        const int64_t zne[4] = {inner, 1, 1, 1};
        std::vector<uint8_t> zeros(size_t(inner) * 4, 0);
        x2 = ggml_concat(ctx, x2, ctx.constant(x2->type, zne, zeros.data(), zeros.size()), 1);
    }
    std::vector<int32_t> table(rows.size());
    for (size_t i = 0; i < rows.size(); i++) {
        if (rows[i] < -1 || rows[i] >= n) throw OpError("row " + std::to_string(rows[i]) + " out of range");
        table[i] = int32_t(rows[i] < 0 ? n : rows[i]);
    }
    const int64_t tne[4] = {int64_t(rows.size()), 1, 1, 1};
    ggml_tensor* y = ggml_get_rows(ctx, x2, ctx.constant(GGML_TYPE_I32, tne, table.data(), table.size() * 4));
    return reshape_ne(ctx, y, ne);
}

}  // namespace o2g
