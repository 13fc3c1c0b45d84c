// Op library: tensor movement at ONNX rank 5 and 6 (see include/onnx2ggml/ops/movement.h). ggml holds 4 dims, so a
// rank > 4 tensor lives folded (outer dims merged into ne[3]); these functions regroup it as each step needs.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/row_gather.h"

namespace o2g {

namespace {

// Groups of a permutation's input dims that stay adjacent and in order (they move as one dim).
int merged_rank(const std::vector<int>& q) {
    int g = q.empty() ? 0 : 1;
    for (size_t i = 1; i < q.size(); i++) g += q[i] != q[i - 1] + 1;
    return g;
}

// Shortest sequence of permutations, each of merged rank <= 4 (one ggml permute), that composes to `goal`.
// Adjacent swaps have merged rank <= 4 and generate every permutation, so a path always exists.
std::vector<std::vector<int>> search_steps(const std::vector<int>& goal) {
    size_t r = goal.size();
    std::vector<int> start(r);
    for (size_t i = 0; i < r; i++) start[i] = int(i);
    std::map<std::vector<int>, std::vector<int>> parent;  // order -> order it was reached from
    std::vector<std::vector<int>> frontier = {start};
    parent[start] = start;
    std::vector<std::vector<int>> moves;  // every permutation of rank r one permute can do
    std::vector<int> q = start;
    do
        if (merged_rank(q) <= 4) moves.push_back(q);
    while (std::next_permutation(q.begin(), q.end()));
    while (!frontier.empty() && !parent.count(goal)) {
        std::vector<std::vector<int>> next;
        for (const auto& cur : frontier)
            for (const auto& m : moves) {
                std::vector<int> n(r);
                for (size_t i = 0; i < r; i++) n[i] = cur[size_t(m[i])];
                if (parent.emplace(n, cur).second) next.push_back(n);
            }
        frontier = std::move(next);
    }
    std::vector<std::vector<int>> orders = {goal};
    while (orders.back() != start) orders.push_back(parent[orders.back()]);
    std::reverse(orders.begin(), orders.end());
    std::vector<std::vector<int>> steps;  // step k moves position i of order k-1 to position i of order k
    for (size_t k = 1; k < orders.size(); k++) {
        std::vector<int> pos(r), st(r);
        for (size_t i = 0; i < r; i++) pos[size_t(orders[k - 1][i])] = int(i);
        for (size_t i = 0; i < r; i++) st[i] = pos[size_t(orders[k][i])];
        steps.push_back(st);
    }
    return steps;
}

// The search visits up to 720 orders: its results are kept, so a graph build pays for each permutation once.
std::vector<std::vector<int>> permute_steps(const std::vector<int>& goal) {
    static std::mutex mu;
    static std::map<std::vector<int>, std::vector<std::vector<int>>> memo;
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find(goal);
    if (it == memo.end()) it = memo.emplace(goal, search_steps(goal)).first;
    return it->second;
}

// One permute of a contiguous tensor of ONNX shape s by a perm of merged rank <= 4.
ggml_tensor* permute_once(Ctx& ctx, ggml_tensor* x, const Ints& s, const std::vector<int>& q) {
    // Merge the runs q keeps together; g[i]: the group of input dim i.
    std::vector<int> start_of;  // input dim that starts each output group, in output order
    for (size_t i = 0; i < q.size(); i++)
        if (i == 0 || q[i] != q[i - 1] + 1) start_of.push_back(q[i]);
    std::vector<int> in_groups = start_of;
    std::sort(in_groups.begin(), in_groups.end());
    int n = int(in_groups.size());
    Ints gs(size_t(n), 1);  // merged input shape, ONNX order
    for (int k = 0; k < n; k++) {
        int end = k + 1 < n ? in_groups[size_t(k + 1)] : int(s.size());
        for (int d = in_groups[size_t(k)]; d < end; d++) gs[size_t(k)] *= s[size_t(d)];
    }
    Ints perm;  // ONNX perm over the merged groups
    for (int st : start_of) perm.push_back(std::find(in_groups.begin(), in_groups.end(), st) - in_groups.begin());
    int64_t ne[4];
    fold_ne(gs, ne);
    x = reshape_ne(ctx, x, ne);
    return transpose(ctx, x, {ggml_perm(perm)});
}

}  // namespace

Ints transpose_shape(const Ints& shape, const Ints& perm) {
    Ints s;
    for (int64_t a : perm) {
        if (a < 0 || a >= int64_t(shape.size())) throw OpError("Transpose: perm entry " + std::to_string(a) + " out of range");
        s.push_back(shape[size_t(a)]);
    }
    return s;
}

ggml_tensor* transpose_nd(Ctx& ctx, ggml_tensor* x, const Ints& shape, const TransposeNdParams& p) {
    size_t r = shape.size();
    if (p.perm.size() != r || r > 8)
        throw OpError("Transpose: perm " + ints_literal(p.perm) + " for rank " + std::to_string(r));
    std::vector<int> q;
    std::vector<bool> seen(r, false);
    for (int64_t v : p.perm) {
        if (v < 0 || v >= int64_t(r) || seen[size_t(v)])
            throw OpError("Transpose: perm " + ints_literal(p.perm) + " is not a permutation");
        seen[size_t(v)] = true;
    }
    // Size-1 dims do not move data: drop them, then merge dims that stay adjacent.
    std::vector<int> keep;
    for (size_t d = 0; d < r; d++)
        if (shape[d] != 1) keep.push_back(int(d));
    Ints s;
    for (int d : keep) s.push_back(shape[size_t(d)]);
    for (int64_t v : p.perm)
        if (shape[size_t(v)] != 1) q.push_back(int(std::find(keep.begin(), keep.end(), int(v)) - keep.begin()));
    Ints out_shape;
    for (int64_t v : p.perm) out_shape.push_back(shape[size_t(v)]);
    x = cont(ctx, x);
    if (q.size() > 6) throw OpError("Transpose: " + std::to_string(q.size()) + " dims of size > 1 (at most 6)");
    for (const auto& st : permute_steps(q)) {
        x = permute_once(ctx, x, s, st);
        Ints ns;
        for (int i : st) ns.push_back(s[size_t(i)]);
        s = ns;
    }
    int64_t ne[4];
    fold_ne(out_shape, ne);
    return reshape_ne(ctx, x, ne);
}

ggml_tensor* concat_nd(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const Ints& shape, const ConcatNdParams& p) {
    int64_t r = int64_t(shape.size()), ax = p.axis;
    if (ax < 0 || ax >= r) throw OpError("Concat: axis " + std::to_string(ax) + " for rank " + std::to_string(r));
    // Both seen as [outer, their dim, inner], joined along the middle.
    int64_t outer = prod(Ints(shape.begin(), shape.begin() + ax)), inner = prod(Ints(shape.begin() + ax + 1, shape.end()));
    int64_t per = outer * inner, na = ggml_nelements(a), nb = ggml_nelements(b);
    if (per <= 0 || na % per || nb % per)
        throw OpError("Concat: inputs of " + std::to_string(na) + " and " + std::to_string(nb) +
                      " elements do not fit shape " + ints_literal(shape) + " outside axis " + std::to_string(ax));
    int64_t nea[4] = {inner, na / per, outer, 1}, neb[4] = {inner, nb / per, outer, 1};
    ggml_tensor* y = ggml_concat(ctx, reshape_ne(ctx, a, nea), reshape_ne(ctx, b, neb), 1);
    Ints os = shape;
    os[size_t(ax)] = (na + nb) / per;
    int64_t ne[4];
    fold_ne(os, ne);
    return reshape_ne(ctx, y, ne);
}

Ints concat_shape(const Ints& a, const Ints& b, int64_t axis) {
    if (a.size() != b.size() || axis < 0 || axis >= int64_t(a.size()))
        throw OpError("Concat: ranks " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + ", axis " +
                      std::to_string(axis));
    Ints s = a;
    s[size_t(axis)] += b[size_t(axis)];
    return s;
}

namespace {
// Slice's axes as non-negative axes of a rank-r tensor (empty: 0..n-1), its arguments checked.
Ints slice_axes(int64_t r, const Ints& starts, const Ints& ends, const Ints& axes_in, const Ints& steps) {
    size_t n = starts.size();
    Ints axes = axes_in;
    if (axes.empty())
        for (size_t i = 0; i < n; i++) axes.push_back(int64_t(i));
    if (ends.size() != n || axes.size() != n || (!steps.empty() && steps.size() != n))
        throw OpError("Slice: starts, ends, axes and steps differ in length");
    for (int64_t& a : axes) {
        if (a < -r || a >= r) throw OpError("Slice: axis " + std::to_string(a) + " for rank " + std::to_string(r));
        if (a < 0) a += r;
    }
    return axes;
}
}  // namespace

Ints slice_shape(const Ints& shape, const Ints& starts, const Ints& ends, const Ints& axes_in, const Ints& steps) {
    const Ints axes = slice_axes(int64_t(shape.size()), starts, ends, axes_in, steps);
    Ints s = shape;
    for (size_t i = 0; i < axes.size(); i++) {
        int64_t a = axes[i], st = steps.empty() ? 1 : steps[i], first, count;
        if (st == 0) throw OpError("Slice: step is 0");
        slice_range(s[size_t(a)], starts[i], ends[i], st, first, count);
        s[size_t(a)] = count;
    }
    return s;
}

ggml_tensor* slice_nd(Ctx& ctx, ggml_tensor* x, const Ints& shape, const Ints& starts, const Ints& ends, const Ints& axes_in,
                      const Ints& steps) {
    const Ints axes = slice_axes(int64_t(shape.size()), starts, ends, axes_in, steps);
    Ints s = shape;
    for (size_t i = 0; i < axes.size(); i++) {
        int64_t a = axes[i];
        // The tensor seen as [outer, dim a, inner]: a rank-3 slice of its middle dim.
        Ints s3 = {prod(Ints(s.begin(), s.begin() + a)), s[size_t(a)], prod(Ints(s.begin() + a + 1, s.end()))};
        int64_t ne[4];
        fold_ne(s3, ne);
        x = reshape_ne(ctx, x, ne);
        x = slice(ctx, x, {starts[i]}, {ends[i]}, {1}, steps.empty() ? Ints{} : Ints{steps[i]}, {3});
        s[size_t(a)] = x->ne[1];
    }
    int64_t ne[4];
    fold_ne(s, ne);
    return reshape_ne(ctx, x, ne);
}

}  // namespace o2g
