// Host functions (onnx2ggml/ops/host.h): the ops that select by value, whose output sizes depend on the data
// (TopK on host data, OneHot, NonZero, Unique, NonMaxSuppression, GatherND on host data).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "lib/host_util.h"
#include "lib/index_maps.h"
#include "onnx2ggml/ops.h"

namespace o2g {

using onnx2ggml::dtype_is_float;
using onnx2ggml::dtype_size;
using onnx2ggml::host_axis;
using onnx2ggml::host_gather_flat;
using onnx2ggml::strides_of;

namespace {

// Sizes before and after `axis`: the tensor seen as [outer, shape[axis], inner].
void outer_inner(const Shape& s, int64_t axis, int64_t& outer, int64_t& inner) {
    outer = inner = 1;
    for (int64_t i = 0; i < axis; i++) outer *= s[size_t(i)];
    for (size_t i = size_t(axis) + 1; i < s.size(); i++) inner *= s[i];
}

}  // namespace

HostTensor host_topk(const HostTensor& x, const Ints& k, const HostTopKParams& p) {
    int64_t axis = host_axis(p.axis, int64_t(x.shape.size()), "TopK axis");
    if (k.size() != 1) throw OpError("TopK: K must hold one value");
    int64_t K = k[0], A = x.shape[size_t(axis)];
    if (K < 0 || K > A) throw OpError("TopK: K = " + std::to_string(K) + " out of range");
    Shape os = x.shape;
    os[size_t(axis)] = K;
    int64_t outer, inner;
    outer_inner(x.shape, axis, outer, inner);
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
                    return p.largest ? a1 > b1 : a1 < b1;
                }
                int64_t a1 = x.i64(at(i)), b1 = x.i64(at(j));
                return p.largest ? a1 > b1 : a1 < b1;
            });
            for (int64_t kk = 0; kk < K; kk++) {
                size_t dst = size_t((o * K + kk) * inner + in);
                map[dst] = at(idx[size_t(kk)]);
                ids[dst] = idx[size_t(kk)];
            }
        }
    if (p.indices) return HostTensor::from_i64(DType::INT64, os, ids);
    return host_gather_flat(x, os, map);
}

HostTensor host_one_hot(const HostTensor& indices, const HostTensor& depth_in, const HostTensor& values, int64_t axis_in) {
    auto dv = depth_in.to_f64();
    if (dv.size() != 1) throw OpError("OneHot: depth must hold one value");
    int64_t depth = int64_t(dv[0]);
    if (depth < 0) throw OpError("OneHot: negative depth " + std::to_string(depth));
    if (values.numel() != 2) throw OpError("OneHot: values must hold two elements");
    int64_t r = int64_t(indices.shape.size()) + 1;
    int64_t axis = host_axis(axis_in, r, "OneHot axis");
    Shape os = indices.shape;
    os.insert(os.begin() + axis, depth);
    // The index dims split at axis: [outer, inner] around the new depth dim.
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; i++) outer *= indices.shape[size_t(i)];
    for (size_t i = size_t(axis); i < indices.shape.size(); i++) inner *= indices.shape[i];
    std::vector<int64_t> map(size_t(outer * depth * inner), 0);  // 0: off value, 1: on value
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t v = int64_t(indices.f64(o * inner + in));
            if (v < 0) v += depth;
            for (int64_t d = 0; d < depth; d++) map[size_t((o * depth + d) * inner + in)] = d == v ? 1 : 0;
        }
    return host_gather_flat(values, os, map);
}

HostTensor host_nonzero(const HostTensor& x) {
    int64_t r = int64_t(x.shape.size());
    auto st = strides_of(x.shape);
    std::vector<int64_t> nz;
    bool f = dtype_is_float(x.dtype);
    for (int64_t i = 0; i < x.numel(); i++)
        if (f ? x.f64(i) != 0 : x.i64(i) != 0) nz.push_back(i);
    int64_t n = int64_t(nz.size());
    std::vector<int64_t> out(size_t(r * n));
    for (int64_t k = 0; k < n; k++) {
        int64_t rem = nz[size_t(k)];
        for (int64_t d = 0; d < r; d++) {
            out[size_t(d * n + k)] = rem / st[size_t(d)];
            rem %= st[size_t(d)];
        }
    }
    return HostTensor::from_i64(DType::INT64, {r, n}, out);
}

HostTensor host_unique(const HostTensor& x, const HostUniqueParams& p) {
    const Shape& xs = x.shape;
    int64_t axis = p.has_axis ? host_axis(p.axis, int64_t(xs.size()), "Unique axis") : 0;
    // Slices along the axis (or single elements), each compared as a sequence of values.
    int64_t outer = 1, A = x.numel(), inner = 1;
    if (p.has_axis) {
        A = xs[size_t(axis)];
        outer_inner(xs, axis, outer, inner);
    }
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
    if (!p.sorted) {
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
    switch (p.output) {
        case HOST_UNIQUE_Y: break;
        case HOST_UNIQUE_INDICES: return HostTensor::from_i64(DType::INT64, {U}, idx_out);
        case HOST_UNIQUE_INVERSE: return HostTensor::from_i64(DType::INT64, {A}, inv_out);
        case HOST_UNIQUE_COUNTS: return HostTensor::from_i64(DType::INT64, {U}, cnt_out);
        default: throw OpError("Unique has no output " + std::to_string(p.output));
    }
    Shape ys = p.has_axis ? xs : Shape{U};
    if (p.has_axis) ys[size_t(axis)] = U;
    HostTensor y = HostTensor::alloc(x.dtype, ys);
    size_t es = dtype_size(x.dtype);
    for (int64_t u = 0; u < U; u++)
        for (int64_t k = 0; k < len; k++) {
            int64_t o = k / inner, in = k % inner;
            int64_t dst = (o * U + u) * inner + in;
            std::memcpy(y.mut() + size_t(dst) * es, x.data + size_t(elem(idx_out[size_t(u)], k)) * es, es);
        }
    return y;
}

HostTensor host_non_max_suppression(const HostTensor& boxes, const HostTensor& scores, const HostTensor& max_per_class,
                                    const HostTensor& iou_threshold, const HostTensor& score_threshold,
                                    const HostNmsParams& p) {
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4)
        throw OpError("NonMaxSuppression: boxes must have shape (batch, boxes, 4)");
    if (scores.shape.size() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
        throw OpError("NonMaxSuppression: scores must have shape (batch, classes, boxes)");
    int64_t NB = boxes.shape[0], NBox = boxes.shape[1], NC = scores.shape[1];
    int64_t max_out = max_per_class.numel() > 0 ? std::max<int64_t>(max_per_class.i64(0), 0) : 0;
    float iou_th = iou_threshold.numel() > 0 ? float(iou_threshold.f64(0)) : 0;
    bool has_score = score_threshold.numel() > 0;
    float score_th = has_score ? float(score_threshold.f64(0)) : 0;
    auto bx = boxes.to_f32(), sc = scores.to_f32();
    // Box edges as (xmin, xmax, ymin, ymax), computed in float like the reference.
    auto edges = [&](int64_t b, int64_t i, float e[4]) {
        const float* v = bx.data() + (b * NBox + i) * 4;
        if (!p.center_point_box) {
            e[0] = std::min(v[1], v[3]);
            e[1] = std::max(v[1], v[3]);
            e[2] = std::min(v[0], v[2]);
            e[3] = std::max(v[0], v[2]);
        } else {
            float hw = v[2] / 2, hh = v[3] / 2;
            e[0] = v[0] - hw;
            e[1] = v[0] + hw;
            e[2] = v[1] - hh;
            e[3] = v[1] + hh;
        }
    };
    auto suppress = [&](int64_t b, int64_t i, int64_t j) {
        float a[4], c[4];
        edges(b, i, a);
        edges(b, j, c);
        float ix0 = std::max(a[0], c[0]), ix1 = std::min(a[1], c[1]);
        if (ix1 <= ix0) return false;
        float iy0 = std::max(a[2], c[2]), iy1 = std::min(a[3], c[3]);
        if (iy1 <= iy0) return false;
        float inter = (ix1 - ix0) * (iy1 - iy0);
        if (inter <= 0) return false;
        float a1 = (a[1] - a[0]) * (a[3] - a[2]), a2 = (c[1] - c[0]) * (c[3] - c[2]);
        float uni = a1 + a2 - inter;
        if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
        return inter / uni > iou_th;
    };
    std::vector<int64_t> out, cand, sel;
    for (int64_t b = 0; b < NB; b++)
        for (int64_t c = 0; c < NC; c++) {
            const float* s = sc.data() + (b * NC + c) * NBox;
            cand.clear();
            for (int64_t i = 0; i < NBox; i++)
                if (!has_score || s[i] > score_th) cand.push_back(i);
            std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
            sel.clear();
            for (int64_t i : cand) {
                if (int64_t(sel.size()) >= max_out) break;
                bool keep = true;
                for (int64_t j : sel)
                    if (suppress(b, i, j)) {
                        keep = false;
                        break;
                    }
                if (!keep) continue;
                sel.push_back(i);
                out.insert(out.end(), {b, c, i});
            }
        }
    return HostTensor::from_i64(DType::INT64, {int64_t(out.size() / 3), 3}, out);
}

HostTensor host_gather_nd(const HostTensor& x, const HostTensor& indices, int64_t batch_dims) {
    RowMap m = gather_nd_rows(x.shape, indices.to_i64(), indices.shape, batch_dims);
    return onnx2ggml::host_take_rows(x, m.inner, m.rows, m.os);
}

}  // namespace o2g
