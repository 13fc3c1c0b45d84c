// Ops that select by value: TopK (1-11), Compress (9-11), and the host-only NonZero (9-13), OneHot (9-11) and
// Unique (11), whose output shapes depend on the data.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "lib/index_maps.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {
bool want(const Lower& L, size_t i) { return L.node.outputs.size() > i && !L.node.outputs[i].empty(); }
}  // namespace

// ---- TopK ----
// K is an attribute before opset 10 and input 1 from 10.
static Sym topk_params(Lower& L, Sym k, int& axis, bool& largest) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    axis = norm_axis(L, L.node.get_int("axis", -1), r);
    if (k.v.size() != 1) L.error("K must hold one value");
    largest = L.node.get_int("largest", 1) != 0;
    if (k.v[0] < 0 || k.v[0] > xs[size_t(axis)]) L.error("K = " + std::to_string(k.v[0]) + " out of range");
    return k;
}

static void topk_out(Lower& L, const Sym& given) {
    int axis;
    bool largest;
    const Sym k = topk_params(L, given, axis, largest);
    int r = L.rank(0);
    if (k.v[0] == 0) L.error("K = 0 gives an empty output, which ggml cannot hold");
    if (!dtype_is_float(L.dtype(0))) L.error("TopK of integer data computed on the device is not supported");
    if (r > 4) L.error("rank > 4 TopK is not supported on the device");
    o2g::TopKParams p{gdim(r, axis), r, largest, false};
    ggml_tensor* x = L.t(0);
    L.out(0, O2G_CALL(L, o2g::topk, x, k, p), L.dtype(0), r);
    if (want(L, 1)) {
        p.indices = true;
        L.out(1, O2G_CALL(L, o2g::topk, x, k, p), DType::INT64, r);
    }
}

static void topk_host(Lower& L, const Sym& given) {
    int axis;
    bool largest;
    int64_t K = topk_params(L, given, axis, largest).v[0];
    const HostTensor& x = L.h(0);
    Shape os = x.shape;
    int64_t A = os[size_t(axis)];
    os[size_t(axis)] = K;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= x.shape[size_t(i)];
    for (size_t i = size_t(axis) + 1; i < x.shape.size(); i++) inner *= x.shape[i];
    std::vector<int64_t> idx(static_cast<size_t>(A));
    bool f = dtype_is_float(x.dtype);
    // Output order: [outer, K, inner].
    std::vector<int64_t> map(size_t(outer * K * inner), 0), ids(map.size(), 0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            std::iota(idx.begin(), idx.end(), 0);
            auto at = [&](int64_t a) { return (o * A + a) * inner + in; };
            std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) {
                if (f) {
                    double a1 = x.f64(at(i)), b1 = x.f64(at(j));
                    return largest ? a1 > b1 : a1 < b1;
                }
                int64_t a1 = x.i64(at(i)), b1 = x.i64(at(j));
                return largest ? a1 > b1 : a1 < b1;
            });
            for (int64_t kk = 0; kk < K; kk++) {
                size_t dst = size_t((o * K + kk) * inner + in);
                map[dst] = at(idx[size_t(kk)]);
                ids[dst] = idx[size_t(kk)];
            }
        }
    L.out_host(0, host_gather_flat(x, os, map));
    if (want(L, 1)) L.out_host(1, HostTensor::from_i64(DType::INT64, os, ids));
}
static Sym topk_attr(Lower& L) { return Sym{{L.node.get_int("k", 0)}, nullptr}; }
void lower_TopK_1(Lower& L) { topk_out(L, topk_attr(L)); }
void lower_TopK(Lower& L) { topk_out(L, L.sym(1)); }
void host_TopK_1(Lower& L) { topk_host(L, topk_attr(L)); }
void host_TopK(Lower& L) { topk_host(L, L.sym(1)); }

// ---- Compress (also host) ----
void lower_Compress(Lower& L) {
    int r = L.rank(0);
    int axis = L.node.has("axis") ? norm_axis(L, L.node.get_int("axis", 0), r) : -1;
    const Sym cond = L.sym(1);
    o2g::RowMap m = o2g::compress_rows(L.shape(0), cond.v, axis);
    if (L.b.host_mode) return L.out_host(0, host_take_rows(L.h(0), m.inner, m.rows, m.os));
    o2g::CompressParams p{axis < 0 ? -1 : gdim(r, axis), r};
    L.out(0, O2G_CALL(L, o2g::compress, L.t(0), cond, p), L.dtype(0), int(m.os.size()));
}

// ---- OneHot, NonZero (host) ----
void host_OneHot(Lower& L) {
    const HostTensor& ind = L.h(0);
    auto dv = L.h(1).to_f64();
    if (dv.size() != 1) L.error("depth must hold one value");
    int64_t depth = int64_t(dv[0]);
    const HostTensor& vals = L.h(2);
    if (vals.numel() != 2) L.error("values must hold two elements");
    int r = int(ind.shape.size()) + 1;
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    Shape os = ind.shape;
    os.insert(os.begin() + axis, depth);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= ind.shape[size_t(i)];
    for (size_t i = size_t(axis); i < ind.shape.size(); i++) inner *= ind.shape[i];
    std::vector<int64_t> map(size_t(outer * depth * inner), 0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t v = int64_t(ind.f64(o * inner + in));
            if (v < 0) v += depth;
            for (int64_t d = 0; d < depth; d++) map[size_t((o * depth + d) * inner + in)] = d == v ? 1 : 0;
        }
    L.out_host(0, host_gather_flat(vals, os, map));
}

void host_NonZero(Lower& L) {
    const HostTensor& x = L.h(0);
    int r = int(x.shape.size());
    auto st = strides_of(x.shape);
    std::vector<int64_t> nz;
    bool f = dtype_is_float(x.dtype);
    for (int64_t i = 0; i < x.numel(); i++)
        if (f ? x.f64(i) != 0 : x.i64(i) != 0) nz.push_back(i);
    int64_t n = int64_t(nz.size());
    std::vector<int64_t> out(size_t(r * n));
    for (int64_t k = 0; k < n; k++) {
        int64_t rem = nz[size_t(k)];
        for (int d = 0; d < r; d++) {
            out[size_t(d * n + k)] = rem / st[size_t(d)];
            rem %= st[size_t(d)];
        }
    }
    L.out_host(0, HostTensor::from_i64(DType::INT64, {int64_t(r), n}, out));
}

// ---- Unique (11, host: the output length depends on the values) ----
void host_Unique(Lower& L) {
    const HostTensor& x = L.h(0);
    bool sorted = L.node.get_int("sorted", 1) != 0;
    Shape xs = x.shape;
    int r = int(xs.size());
    bool has_axis = L.node.has("axis");
    int axis = has_axis ? norm_axis(L, L.node.get_int("axis", 0), r) : 0;
    // Slices along the axis (or single elements), each compared as a sequence of values.
    int64_t outer = 1, A, inner = 1;
    if (has_axis) {
        A = xs[size_t(axis)];
        for (int i = 0; i < axis; i++) outer *= xs[size_t(i)];
        for (int i = axis + 1; i < r; i++) inner *= xs[size_t(i)];
    } else A = x.numel();
    bool f = dtype_is_float(x.dtype);
    auto elem = [&](int64_t sl, int64_t k) {  // k-th element of slice sl
        int64_t o = k / inner, in = k % inner;
        return (o * A + sl) * inner + in;
    };
    int64_t len = outer * inner;
    auto cmp = [&](int64_t a, int64_t b) {  // -1, 0, 1
        for (int64_t k = 0; k < len; k++) {
            int64_t ea = elem(a, k), eb = elem(b, k);
            if (f) {
                double va = x.f64(ea), vb = x.f64(eb);
                if (va != vb) return va < vb ? -1 : 1;
            } else {
                int64_t va = x.i64(ea), vb = x.i64(eb);
                if (va != vb) return va < vb ? -1 : 1;
            }
        }
        return 0;
    };
    std::vector<int64_t> order(static_cast<size_t>(A));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    std::vector<int64_t> first, counts, inverse(static_cast<size_t>(A));
    for (size_t i = 0; i < order.size(); i++) {
        if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
            first.push_back(order[i]);
            counts.push_back(0);
        }
        counts.back()++;
        inverse[size_t(order[i])] = int64_t(first.size()) - 1;
    }
    int64_t U = int64_t(first.size());
    std::vector<int64_t> pos(static_cast<size_t>(U));  // output position of each unique value
    std::iota(pos.begin(), pos.end(), 0);
    if (!sorted) {
        std::vector<int64_t> by_first(static_cast<size_t>(U));
        std::iota(by_first.begin(), by_first.end(), 0);
        std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
        for (int64_t i = 0; i < U; i++) pos[size_t(by_first[size_t(i)])] = i;
    }
    std::vector<int64_t> idx_out(static_cast<size_t>(U)), cnt_out(static_cast<size_t>(U)), inv_out(static_cast<size_t>(A));
    for (int64_t u = 0; u < U; u++) {
        idx_out[size_t(pos[size_t(u)])] = first[size_t(u)];
        cnt_out[size_t(pos[size_t(u)])] = counts[size_t(u)];
    }
    for (int64_t i = 0; i < A; i++) inv_out[size_t(i)] = pos[size_t(inverse[size_t(i)])];
    Shape ys = has_axis ? xs : Shape{U};
    if (has_axis) ys[size_t(axis)] = U;
    HostTensor y = HostTensor::alloc(x.dtype, ys);
    size_t es = dtype_size(x.dtype);
    for (int64_t u = 0; u < U; u++)
        for (int64_t k = 0; k < len; k++) {
            int64_t o = k / inner, in = k % inner;
            int64_t dst = (o * U + u) * inner + in;
            std::memcpy(y.mut() + size_t(dst) * es, x.data + size_t(elem(idx_out[size_t(u)], k)) * es, es);
        }
    L.out_host(0, y);
    if (want(L, 1)) L.out_host(1, HostTensor::from_i64(DType::INT64, {U}, idx_out));
    if (want(L, 2)) L.out_host(2, HostTensor::from_i64(DType::INT64, {A}, inv_out));
    if (want(L, 3)) L.out_host(3, HostTensor::from_i64(DType::INT64, {U}, cnt_out));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& selection_ops() {
    static const std::vector<OpDef> t = {
        {.op = "TopK", .since = 1, .ggml = lower_TopK_1, .host = host_TopK_1},
        {.op = "TopK", .since = 10, .ggml = lower_TopK, .host = host_TopK, .host_inputs = {1}},
        {.op = "OneHot", .since = 9, .host = host_OneHot, .host_inputs = {0,1,2}},
        {.op = "NonZero", .since = 9, .host = host_NonZero, .host_inputs = {0}},
        {.op = "Compress", .since = 9, .ggml = lower_Compress, .host = lower_Compress, .host_inputs = {1}},
        {.op = "Unique", .since = 11, .host = host_Unique, .host_inputs = {0}},
    };
    return t;
}

}  // namespace onnx2ggml
