// Shape and data-movement ops: Shape, Size, Reshape, Flatten, (Un)Squeeze, Transpose, Concat, Split, Slice,
// Gather, GatherElements, Expand, Tile, Pad, Cast, CastLike, Constant, ConstantOfShape, Range, Trilu,
// EyeLike, Dropout, DepthToSpace/SpaceToDepth (opsets 1-23).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/custom.h"
#include "ops/host.h"

namespace onnx2ggml {

namespace {

// Copies elements of `src` into a new tensor of shape `out`, element k taken from flat index map[k].
HostTensor host_gather_flat(const HostTensor& src, const Shape& out, const std::vector<int64_t>& map) {
    HostTensor r = HostTensor::alloc(src.dtype, out);
    size_t es = dtype_size(src.dtype);
    for (size_t k = 0; k < map.size(); k++) std::memcpy(r.mut() + k * es, src.data + size_t(map[k]) * es, es);
    return r;
}

HostTensor make_i64(const std::vector<int64_t>& v) {
    return HostTensor::from_i64(DType::INT64, {int64_t(v.size())}, v);
}

// Gathers along `axis` with host indices (already non-negative) on the device via ggml_get_rows.
ggml_tensor* gather_axis(Lower& L, ggml_tensor* x, const Shape& s, int axis, const std::vector<int64_t>& idx) {
    int64_t outer = 1, inner = 1, A = s[size_t(axis)];
    for (int i = 0; i < axis; i++) outer *= s[size_t(i)];
    for (size_t i = size_t(axis) + 1; i < s.size(); i++) inner *= s[i];
    x = ggml_reshape_3d(L.ctx, L.cont(x), inner, A, outer);
    int64_t n = int64_t(idx.size());
    HostTensor ih = HostTensor::alloc(DType::INT32, {outer, n});
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++) ih.set_i64(o * n + j, idx[size_t(j)]);
    ggml_tensor* y = ggml_get_rows(L.ctx, x, L.constant(ih));  // [inner, n, outer]
    Shape os = s;
    os[size_t(axis)] = n;
    return reshape_to(L, y, os);
}

std::vector<int64_t> axes_arg(Lower& L, int input, const char* attr) {
    if (L.opset >= 13 && L.has(input)) return L.ints(input);
    if (L.has(input) && L.n_in() > input) return L.ints(input);
    return L.node.get_ints(attr);
}

}  // namespace

// ---- Shape, Size ----
void host_Shape(Lower& L) {
    const Shape& s = L.shape(0);
    int64_t r = int64_t(s.size());
    int64_t start = L.node.get_int("start", 0), end = L.node.get_int("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    std::vector<int64_t> v;
    for (int64_t i = start; i < end; i++) v.push_back(s[size_t(i)]);
    L.out_host(0, make_i64(v));
}
void host_Size(Lower& L) { L.out_host(0, HostTensor::from_i64(DType::INT64, {}, {shape_numel(L.shape(0))})); }

// ---- Reshape family ----
static Shape reshape_target(Lower& L, const Shape& in, std::vector<int64_t> spec, bool allowzero) {
    int64_t known = 1;
    int neg = -1;
    for (size_t i = 0; i < spec.size(); i++) {
        if (spec[i] == 0 && !allowzero) {
            if (i >= in.size()) L.error("Reshape: 0 at position " + std::to_string(i) + " beyond input rank");
            spec[i] = in[i];
        }
        if (spec[i] == -1) {
            if (neg >= 0) L.error("Reshape: more than one -1 in shape");
            neg = int(i);
        } else if (spec[i] < 0) L.error("Reshape: invalid dim " + std::to_string(spec[i]));
        else known *= spec[i];
    }
    int64_t total = shape_numel(in);
    if (neg >= 0) {
        if (known == 0 || total % known) L.error("Reshape: cannot infer -1 for " + shape_str(in));
        spec[size_t(neg)] = total / known;
    } else if (known != total) L.error("Reshape: cannot reshape " + shape_str(in) + " to " + shape_str(spec));
    return spec;
}

static void reshape_out(Lower& L, const Shape& s) {
    Val& x = L.in(0);
    if (x.host) {
        L.out_host(0, x.host->reshaped(s));
        return;
    }
    L.out_shape(0, reshape_to(L, L.t(0), s), x.dtype, s);
}

void lower_Reshape(Lower& L) {
    Shape s;
    if (L.opset < 5) s = reshape_target(L, L.shape(0), L.node.get_ints("shape"), false);
    else s = reshape_target(L, L.shape(0), L.ints(1), L.node.get_int("allowzero", 0) != 0);
    reshape_out(L, s);
}
void lower_Flatten(Lower& L) {
    const Shape& in = L.shape(0);
    int r = int(in.size());
    int64_t axis = L.node.get_int("axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) L.error("axis out of range");
    int64_t a = 1;
    for (int i = 0; i < axis; i++) a *= in[size_t(i)];
    reshape_out(L, {a, shape_numel(in) / std::max<int64_t>(a, 1) * (a == 0 ? 0 : 1)});
}
void lower_Squeeze(Lower& L) {
    const Shape& in = L.shape(0);
    std::vector<int64_t> axes = axes_arg(L, 1, "axes");
    std::vector<bool> drop(in.size(), false);
    if (axes.empty())
        for (size_t i = 0; i < in.size(); i++) drop[i] = in[i] == 1;
    for (int64_t a : axes) {
        int ax = norm_axis(L, a, int(in.size()));
        if (in[size_t(ax)] != 1) L.error("Squeeze: dim " + std::to_string(ax) + " is not 1");
        drop[size_t(ax)] = true;
    }
    Shape s;
    for (size_t i = 0; i < in.size(); i++)
        if (!drop[i]) s.push_back(in[i]);
    reshape_out(L, s);
}
void lower_Unsqueeze(Lower& L) {
    const Shape& in = L.shape(0);
    std::vector<int64_t> axes = axes_arg(L, 1, "axes");
    int r = int(in.size() + axes.size());
    std::vector<bool> ins(size_t(r), false);
    for (int64_t a : axes) {
        int ax = norm_axis(L, a, r);
        if (ins[size_t(ax)]) L.error("Unsqueeze: repeated axis");
        ins[size_t(ax)] = true;
    }
    Shape s;
    size_t j = 0;
    for (int i = 0; i < r; i++) s.push_back(ins[size_t(i)] ? 1 : in[j++]);
    reshape_out(L, s);
}

// ---- Transpose ----
static std::vector<int64_t> transpose_perm(Lower& L) {
    int r = L.rank(0);
    std::vector<int64_t> perm = L.node.get_ints("perm");
    if (perm.empty())
        for (int i = r - 1; i >= 0; i--) perm.push_back(i);
    if (int(perm.size()) != r) L.error("perm has wrong length");
    for (auto& p : perm) p = norm_axis(L, p, r);
    return perm;
}
void lower_Transpose(Lower& L) {
    int r = L.rank(0);
    auto perm = transpose_perm(L);
    if (r > 4) L.error("rank > 4 Transpose is not supported by ggml");
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    ggml_tensor* y = ggml_cont(L.ctx, ggml_permute(L.ctx, L.t(0), g[0], g[1], g[2], g[3]));
    L.out(0, y, L.dtype(0), r);
}
void host_Transpose(Lower& L) {
    const HostTensor& x = L.h(0);
    auto perm = transpose_perm(L);
    Shape os;
    for (auto p : perm) os.push_back(x.shape[size_t(p)]);
    auto ist = strides_of(x.shape);
    std::vector<int64_t> map(size_t(shape_numel(os)));
    std::vector<int64_t> c(os.size(), 0);
    for (size_t k = 0; k < map.size(); k++) {
        int64_t off = 0;
        for (size_t d = 0; d < os.size(); d++) off += c[d] * ist[size_t(perm[d])];
        map[k] = off;
        for (int d = int(os.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    L.out_host(0, host_gather_flat(x, os, map));
}

// ---- Concat ----
void lower_Concat(Lower& L) {
    int r = L.rank(0);
    if (r > 4) L.error("rank > 4 Concat is not supported on the device");
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    ggml_tensor* acc = nullptr;
    Shape s;
    for (int i = 0; i < L.n_in(); i++) {
        if (!L.has(i) || shape_numel(L.shape(i)) == 0) continue;
        ggml_tensor* x = L.t(i);
        if (!acc) {
            acc = x;
            s = L.shape(i);
        } else {
            acc = ggml_concat(L.ctx, acc, x, gdim(r, axis));
            s[size_t(axis)] += L.shape(i)[size_t(axis)];
        }
    }
    if (!acc) L.error("Concat of empty tensors is not supported on the device");
    L.out(0, acc, L.dtype(0), r);
}
void host_Concat(Lower& L) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    Shape os = L.shape(0);
    os[size_t(axis)] = 0;
    for (int i = 0; i < L.n_in(); i++) {
        const Shape& s = L.shape(i);
        if (int(s.size()) != r) L.error("Concat inputs differ in rank");
        os[size_t(axis)] += s[size_t(axis)];
    }
    HostTensor out = HostTensor::alloc(L.dtype(0), os);
    size_t es = dtype_size(out.dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= os[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= os[size_t(i)];
    int64_t off = 0;
    for (int i = 0; i < L.n_in(); i++) {
        const HostTensor& x = L.h(i);
        int64_t a = x.shape[size_t(axis)];
        for (int64_t o = 0; o < outer; o++)
            std::memcpy(out.mut() + size_t((o * os[size_t(axis)] + off) * inner) * es,
                        x.data + size_t(o * a * inner) * es, size_t(a * inner) * es);
        off += a;
    }
    L.out_host(0, std::move(out));
}

// ---- Split ----
static std::vector<int64_t> split_sizes(Lower& L, int axis) {
    int64_t A = L.shape(0)[size_t(axis)];
    std::vector<int64_t> split;
    if (L.opset >= 13 && L.has(1)) split = L.ints(1);
    else if (L.opset < 13) split = L.node.get_ints("split");
    int n = int(L.node.outputs.size());
    if (split.empty()) {
        if (L.node.has("num_outputs")) n = int(L.node.get_int("num_outputs", n));
        int64_t chunk = (A + n - 1) / n;
        for (int i = 0; i < n; i++) split.push_back(std::min(chunk, A - chunk * i));
    }
    return split;
}
void lower_Split(Lower& L) {
    int r = L.rank(0);
    if (r > 4) L.error("rank > 4 Split is not supported on the device");
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    auto split = split_sizes(L, axis);
    ggml_tensor* x = L.cont(L.t(0));
    int g = gdim(r, axis);
    int64_t off = 0;
    for (size_t i = 0; i < split.size() && i < L.outs.size(); i++) {
        int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
        ne[g] = split[i];
        ggml_tensor* v = ggml_view_4d(L.ctx, x, ne[0], ne[1], ne[2], ne[3], x->nb[1], x->nb[2], x->nb[3],
                                      size_t(off) * x->nb[g]);
        L.out(int(i), ggml_cont(L.ctx, v), L.dtype(0), r);
        off += split[i];
    }
}
void host_Split(Lower& L) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    auto split = split_sizes(L, axis);
    const HostTensor& x = L.h(0);
    int64_t off = 0;
    for (size_t i = 0; i < split.size() && i < L.outs.size(); i++) {
        std::vector<int64_t> idx(size_t(split[i]));
        std::iota(idx.begin(), idx.end(), off);
        Shape os = x.shape;
        os[size_t(axis)] = split[i];
        auto strides = strides_of(x.shape);
        std::vector<int64_t> map;
        int64_t outer = 1, inner = strides[size_t(axis)];
        for (int d = 0; d < axis; d++) outer *= x.shape[size_t(d)];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j : idx)
                for (int64_t k = 0; k < inner; k++) map.push_back((o * x.shape[size_t(axis)] + j) * inner + k);
        L.outs[i] = Val();
        L.out_host(int(i), host_gather_flat(x, os, map));
        off += split[i];
    }
}

// ---- Slice ----
struct SliceAxis { int axis; int64_t start, step, count; };
static std::vector<SliceAxis> slice_params(Lower& L) {
    const Shape& s = L.shape(0);
    int r = int(s.size());
    std::vector<int64_t> starts, ends, axes, steps;
    if (L.opset < 10) {
        starts = L.node.get_ints("starts");
        ends = L.node.get_ints("ends");
        axes = L.node.get_ints("axes");
    } else {
        starts = L.ints(1);
        ends = L.ints(2);
        if (L.has(3)) axes = L.ints(3);
        if (L.has(4)) steps = L.ints(4);
    }
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); i++) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        L.error("starts, ends, axes and steps differ in length");
    std::vector<SliceAxis> out;
    for (size_t i = 0; i < starts.size(); i++) {
        int ax = norm_axis(L, axes[i], r);
        int64_t dim = s[size_t(ax)], st = starts[i], en = ends[i], step = steps[i];
        if (step == 0) L.error("slice step is 0");
        if (st < 0) st += dim;
        if (en < 0) en += dim;
        if (step > 0) {
            st = std::clamp<int64_t>(st, 0, dim);
            en = std::clamp<int64_t>(en, 0, dim);
        } else {
            st = std::clamp<int64_t>(st, 0, dim - 1);
            en = std::clamp<int64_t>(en, -1, dim - 1);
        }
        int64_t count = step > 0 ? std::max<int64_t>(0, (en - st + step - 1) / step)
                                 : std::max<int64_t>(0, (st - en + (-step) - 1) / (-step));
        out.push_back({ax, st, step, count});
    }
    return out;
}
void lower_Slice(Lower& L) {
    auto ps = slice_params(L);
    Shape s = L.shape(0);
    ggml_tensor* x = L.t(0);
    int r = int(s.size());
    if (r > 4) L.error("rank > 4 Slice is not supported on the device");
    for (auto& p : ps)
        if (p.count == 0) {  // an empty result needs no data: it is known on the host
            Shape os = s;
            for (auto& q : ps) os[size_t(q.axis)] = q.count;
            return L.out_host(0, HostTensor::alloc(L.dtype(0), os));
        }
    for (auto& p : ps) {
        if (p.step == 1) {
            x = L.cont(x);
            int g = gdim(r, p.axis);
            int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
            ne[g] = p.count;
            x = ggml_view_4d(L.ctx, x, ne[0], ne[1], ne[2], ne[3], x->nb[1], x->nb[2], x->nb[3],
                             size_t(p.start) * x->nb[g]);
            x = ggml_cont(L.ctx, x);
        } else {
            std::vector<int64_t> idx;
            for (int64_t k = 0; k < p.count; k++) idx.push_back(p.start + k * p.step);
            x = gather_axis(L, x, s, p.axis, idx);
        }
        s[size_t(p.axis)] = p.count;
    }
    L.out(0, x, L.dtype(0), r);
}
void host_Slice(Lower& L) {
    auto ps = slice_params(L);
    const HostTensor& x = L.h(0);
    Shape os = x.shape;
    std::vector<int64_t> start(os.size(), 0), step(os.size(), 1);
    for (auto& p : ps) {
        os[size_t(p.axis)] = p.count;
        start[size_t(p.axis)] = p.start;
        step[size_t(p.axis)] = p.step;
    }
    auto ist = strides_of(x.shape);
    std::vector<int64_t> map(size_t(shape_numel(os)));
    std::vector<int64_t> c(os.size(), 0);
    for (size_t k = 0; k < map.size(); k++) {
        int64_t off = 0;
        for (size_t d = 0; d < os.size(); d++) off += (start[d] + c[d] * step[d]) * ist[d];
        map[k] = off;
        for (int d = int(os.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    L.out_host(0, host_gather_flat(x, os, map));
}

// ---- Gather ----
void lower_Gather(Lower& L) {
    const Shape& s = L.shape(0);
    int r = int(s.size());
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    const Shape& is = L.shape(1);
    Shape os;
    for (int i = 0; i < axis; i++) os.push_back(s[size_t(i)]);
    for (int64_t d : is) os.push_back(d);
    for (int i = axis + 1; i < r; i++) os.push_back(s[size_t(i)]);
    if (L.in(1).host) {
        auto idx = L.ints(1);
        for (auto& v : idx) {
            if (v < -s[size_t(axis)] || v >= s[size_t(axis)]) L.error("Gather index " + std::to_string(v) + " out of range");
            if (v < 0) v += s[size_t(axis)];
        }
        ggml_tensor* y = gather_axis(L, L.t(0), s, axis, idx);
        return L.out(0, reshape_to(L, y, os), L.dtype(0), int(os.size()));
    }
    // Device indices (assumed in range and non-negative), e.g. token ids into an embedding.
    int64_t outer = 1, inner = 1, A = s[size_t(axis)];
    for (int i = 0; i < axis; i++) outer *= s[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= s[size_t(i)];
    if (outer != 1) L.error("Gather with device indices is supported on axis 0 only");
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), inner, A);
    ggml_tensor* idx = ggml_reshape_1d(L.ctx, L.cont(L.t(1)), shape_numel(is));
    L.out(0, reshape_to(L, ggml_get_rows(L.ctx, x, idx), os), L.dtype(0), int(os.size()));
}
void host_Gather(Lower& L) {
    const HostTensor& x = L.h(0);
    const Shape& s = x.shape;
    int r = int(s.size());
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    auto idx = L.ints(1);
    Shape os;
    for (int i = 0; i < axis; i++) os.push_back(s[size_t(i)]);
    for (int64_t d : L.shape(1)) os.push_back(d);
    for (int i = axis + 1; i < r; i++) os.push_back(s[size_t(i)]);
    int64_t outer = 1, inner = 1, A = s[size_t(axis)];
    for (int i = 0; i < axis; i++) outer *= s[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= s[size_t(i)];
    std::vector<int64_t> map;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j : idx) {
            if (j < -A || j >= A) L.error("Gather index " + std::to_string(j) + " out of range");
            if (j < 0) j += A;
            for (int64_t k = 0; k < inner; k++) map.push_back((o * A + j) * inner + k);
        }
    L.out_host(0, host_gather_flat(x, os, map));
}

void host_GatherElements(Lower& L) {
    const HostTensor& x = L.h(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), int(x.shape.size()));
    const HostTensor& ih = L.h(1);
    L.out_host(0, host_gather_flat(x, ih.shape, element_offsets(L, x.shape, ih, axis)));
}
void lower_GatherElements(Lower& L) {
    // Flat gather: host-computed element offsets into a 1-D view of the data.
    const Shape& s = L.shape(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), int(s.size()));
    const HostTensor& ih = L.h(1);
    Shape os = ih.shape;
    auto offs = element_offsets(L, s, ih, axis);
    HostTensor map = HostTensor::from_i64(DType::INT32, {int64_t(offs.size())}, offs);
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), 1, shape_numel(s));
    ggml_tensor* y = ggml_get_rows(L.ctx, x, L.constant(map));
    L.out(0, reshape_to(L, y, os), L.dtype(0), int(os.size()));
}

// ---- Expand, Tile ----
void lower_Expand(Lower& L) {
    Shape os = broadcast_shapes(L, L.shape(0), L.ints(1));
    L.out_shape(0, broadcast_to(L, L.t(0), L.shape(0), os), L.dtype(0), os);
}
void host_Expand(Lower& L) {
    Shape os = broadcast_shapes(L, L.shape(0), L.ints(1));
    L.out_host(0, host_gather_flat(L.h(0), os, broadcast_index(L.shape(0), os)));
}
void lower_Tile(Lower& L) {
    auto rep = L.ints(1);
    Shape s = L.shape(0), os = s;
    if (rep.size() != s.size()) L.error("repeats length differs from rank");
    for (size_t i = 0; i < s.size(); i++) os[i] *= rep[i];
    int64_t ne[4];
    shape_to_ne(L, os, ne);
    L.out(0, ggml_repeat_4d(L.ctx, L.t(0), ne[0], ne[1], ne[2], ne[3]), L.dtype(0), int(os.size()));
}
void host_Tile(Lower& L) {
    auto rep = L.ints(1);
    const HostTensor& x = L.h(0);
    Shape os = x.shape;
    if (rep.size() != os.size()) L.error("repeats length differs from rank");
    for (size_t i = 0; i < os.size(); i++) os[i] *= rep[i];
    auto ist = strides_of(x.shape);
    std::vector<int64_t> map(size_t(shape_numel(os)));
    std::vector<int64_t> c(os.size(), 0);
    for (size_t k = 0; k < map.size(); k++) {
        int64_t off = 0;
        for (size_t d = 0; d < os.size(); d++) off += (c[d] % x.shape[d]) * ist[d];
        map[k] = off;
        for (int d = int(os.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    L.out_host(0, host_gather_flat(x, os, map));
}

// ---- Pad ----
struct PadSpec { std::vector<int64_t> begin, end; std::string mode; double value; };
static PadSpec pad_spec(Lower& L) {
    int r = L.rank(0);
    PadSpec p;
    p.mode = L.node.get_string("mode", "constant");
    std::vector<int64_t> pads;
    p.value = 0;
    if (L.opset < 11) {
        pads = L.node.get_ints(L.opset < 2 ? "paddings" : "pads");
        p.value = L.node.get_float("value", 0.0f);
    } else {
        pads = L.ints(1);
        if (L.has(2)) p.value = L.h(2).f64(0);
    }
    std::vector<int64_t> axes;
    if (L.opset >= 18 && L.has(3)) axes = L.ints(3);
    else
        for (int i = 0; i < r; i++) axes.push_back(i);
    if (pads.size() != axes.size() * 2) L.error("pads has wrong length");
    p.begin.assign(size_t(r), 0);
    p.end.assign(size_t(r), 0);
    for (size_t i = 0; i < axes.size(); i++) {
        int ax = norm_axis(L, axes[i], r);
        p.begin[size_t(ax)] = pads[i];
        p.end[size_t(ax)] = pads[i + axes.size()];
    }
    return p;
}
// Source index for output position o along an axis of size n (or -1 for the constant value).
static int64_t pad_src(const std::string& mode, int64_t o, int64_t n) {
    if (o >= 0 && o < n) return o;
    if (mode == "constant") return -1;
    if (mode == "edge") return o < 0 ? 0 : n - 1;
    if (mode == "wrap") return ((o % n) + n) % n;
    // reflect
    if (n == 1) return 0;
    int64_t period = 2 * (n - 1);
    int64_t m = ((o % period) + period) % period;
    return m < n ? m : period - m;
}
void lower_Pad(Lower& L) {
    PadSpec p = pad_spec(L);
    Shape s = L.shape(0);
    int r = int(s.size());
    if (r > 4) L.error("rank > 4 Pad is not supported on the device");
    ggml_tensor* x = L.t(0);
    if (p.mode == "constant") {
        // Crop negative pads first, then pad positive ones with zeros, shifted by the value.
        for (int a = 0; a < r; a++) {
            if (p.begin[size_t(a)] < 0 || p.end[size_t(a)] < 0) {
                int64_t b = std::max<int64_t>(0, -p.begin[size_t(a)]), e = std::max<int64_t>(0, -p.end[size_t(a)]);
                std::vector<int64_t> idx;
                for (int64_t k = b; k < s[size_t(a)] - e; k++) idx.push_back(k);
                x = gather_axis(L, x, s, a, idx);
                s[size_t(a)] = int64_t(idx.size());
            }
        }
        int lp[4] = {0, 0, 0, 0}, rp[4] = {0, 0, 0, 0};
        for (int a = 0; a < r; a++) {
            lp[gdim(r, a)] = int(std::max<int64_t>(0, p.begin[size_t(a)]));
            rp[gdim(r, a)] = int(std::max<int64_t>(0, p.end[size_t(a)]));
        }
        float v = float(p.value);
        if (v != 0) x = ggml_scale_bias(L.ctx, x, 1.0f, -v);
        x = ggml_pad_ext(L.ctx, x, lp[0], rp[0], lp[1], rp[1], lp[2], rp[2], lp[3], rp[3]);
        if (v != 0) x = ggml_scale_bias(L.ctx, x, 1.0f, v);
        return L.out(0, x, L.dtype(0), r);
    }
    for (int a = 0; a < r; a++) {
        if (p.begin[size_t(a)] == 0 && p.end[size_t(a)] == 0) continue;
        std::vector<int64_t> idx;
        for (int64_t o = -p.begin[size_t(a)]; o < s[size_t(a)] + p.end[size_t(a)]; o++)
            idx.push_back(pad_src(p.mode, o, s[size_t(a)]));
        x = gather_axis(L, x, s, a, idx);
        s[size_t(a)] = int64_t(idx.size());
    }
    L.out(0, x, L.dtype(0), r);
}
void host_Pad(Lower& L) {
    PadSpec p = pad_spec(L);
    const HostTensor& x = L.h(0);
    Shape os = x.shape;
    for (size_t a = 0; a < os.size(); a++) os[a] += p.begin[a] + p.end[a];
    HostTensor out = HostTensor::alloc(x.dtype, os);
    auto ist = strides_of(x.shape);
    std::vector<int64_t> c(os.size(), 0);
    size_t es = dtype_size(x.dtype);
    for (int64_t k = 0; k < out.numel(); k++) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < os.size(); d++) {
            int64_t src = pad_src(p.mode, c[d] - p.begin[d], x.shape[d]);
            if (src < 0) inside = false;
            else off += src * ist[d];
        }
        if (inside) std::memcpy(out.mut() + size_t(k) * es, x.data + size_t(off) * es, es);
        else out.set_f64(k, p.value);
        for (int d = int(os.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    L.out_host(0, std::move(out));
}

// ---- Cast ----
static DType cast_target(Lower& L) {
    if (L.node.op_type == "CastLike") return L.dtype(1);
    const Attribute* a = L.node.attr("to");
    if (!a) L.error("missing attribute 'to'");
    if (a->type == AttrType::STRING) L.error("string 'to' is not supported");
    DType to = DType(int32_t(a->i));
    if (!dtype_supported(to)) L.error(std::string("cast to ") + dtype_name(to) + " is not supported");
    return to;
}
void lower_Cast(Lower& L) {
    DType to = cast_target(L), from = L.dtype(0);
    ggml_tensor* x = L.t(0);
    bool to_int = dtype_is_integer(to), from_int = dtype_is_integer(from);
    if (to_int && !from_int) x = ggml_cast(L.ctx, ggml_trunc(L.ctx, x), GGML_TYPE_I32);
    else if (!to_int && from_int) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    else if (to == DType::BOOL && from != DType::BOOL) x = custom_unary(L, custom_unary(L, x, UnaryK::Not), UnaryK::Not);
    else if (to == DType::FLOAT16 && from != DType::FLOAT16)  // round through half precision
        x = ggml_cast(L.ctx, ggml_cast(L.ctx, x, GGML_TYPE_F16), GGML_TYPE_F32);
    else if (to == DType::BFLOAT16 && from != DType::BFLOAT16)
        x = ggml_cast(L.ctx, ggml_cast(L.ctx, x, GGML_TYPE_BF16), GGML_TYPE_F32);
    L.out_shape(0, x, to, L.shape(0));
}
void host_Cast(Lower& L) { L.out_host(0, L.h(0).cast(cast_target(L))); }

// ---- Constants and generators ----
void host_Constant(Lower& L) {
    const Node& n = L.node;
    if (const Attribute* a = n.attr("value")) {
        if (!a->t || !dtype_supported(a->t->dtype)) L.error("constant of unsupported type");
        HostTensor h;
        h.dtype = a->t->dtype;
        h.shape = a->t->dims;
        h.data = a->t->data;
        h.nbytes = a->t->nbytes;
        h.keep = a->t->keep;
        return L.out_host(0, h);
    }
    if (const Attribute* a = n.attr("value_float")) return L.out_host(0, HostTensor::from_f64(DType::FLOAT, {}, {a->f}));
    if (const Attribute* a = n.attr("value_int")) return L.out_host(0, HostTensor::from_i64(DType::INT64, {}, {a->i}));
    if (const Attribute* a = n.attr("value_floats")) {
        std::vector<double> v(a->floats.begin(), a->floats.end());
        return L.out_host(0, HostTensor::from_f64(DType::FLOAT, {int64_t(v.size())}, v));
    }
    if (const Attribute* a = n.attr("value_ints")) return L.out_host(0, make_i64(a->ints));
    L.error("constant kind not supported (string or sparse)");
}
void host_ConstantOfShape(Lower& L) {
    Shape s = L.ints(0);
    for (auto d : s)
        if (d < 0) L.error("negative dim in shape");
    DType dt = DType::FLOAT;
    double v = 0;
    const Attribute* a = L.node.attr("value");
    HostTensor src;
    if (a && a->t) {
        dt = a->t->dtype;
        if (!dtype_supported(dt)) L.error("unsupported value type");
        src.dtype = dt;
        src.shape = {1};
        src.data = a->t->data;
        src.nbytes = a->t->nbytes;
    }
    HostTensor out = HostTensor::alloc(dt, s);
    size_t es = dtype_size(dt);
    if (src.data)
        for (int64_t k = 0; k < out.numel(); k++) std::memcpy(out.mut() + size_t(k) * es, src.data, es);
    else if (v != 0)
        for (int64_t k = 0; k < out.numel(); k++) out.set_f64(k, v);
    L.out_host(0, std::move(out));
}
void host_Range(Lower& L) {
    DType dt = L.dtype(0);
    if (dtype_is_float(dt)) {
        double st = L.h(0).f64(0), lim = L.h(1).f64(0), d = L.h(2).f64(0);
        if (d == 0) L.error("Range delta is 0");
        int64_t n = std::max<int64_t>(0, int64_t(std::ceil((lim - st) / d)));
        std::vector<double> v;
        for (int64_t i = 0; i < n; i++) v.push_back(st + double(i) * d);
        if (dt == DType::FLOAT)  // accumulate in float like the reference
            for (int64_t i = 0; i < n; i++) v[size_t(i)] = double(float(st) + float(i) * float(d));
        return L.out_host(0, HostTensor::from_f64(dt, {n}, v));
    }
    int64_t st = L.h(0).i64(0), lim = L.h(1).i64(0), d = L.h(2).i64(0);
    if (d == 0) L.error("Range delta is 0");
    int64_t n = std::max<int64_t>(0, d > 0 ? (lim - st + d - 1) / d : (st - lim - d - 1) / (-d));
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; i++) v.push_back(st + i * d);
    L.out_host(0, HostTensor::from_i64(dt, {n}, v));
}
static HostTensor trilu_mask(Lower& L, const Shape& s) {
    bool upper = L.node.get_int("upper", 1) != 0;
    int64_t k = L.has(1) ? L.h(1).i64(0) : 0;
    int64_t R = s[s.size() - 2], C = s[s.size() - 1];
    HostTensor m = HostTensor::alloc(DType::UINT8, {R, C});
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) m.mut()[i * C + j] = upper ? (j - i >= k) : (j - i <= k);
    return m;
}
void lower_Trilu(Lower& L) {
    const Shape& s = L.shape(0);
    if (s.size() < 2) L.error("Trilu needs rank >= 2");
    HostTensor m = trilu_mask(L, s).cast(DType::FLOAT);
    L.out_shape(0, ggml_mul(L.ctx, L.t(0), L.constant(m)), L.dtype(0), L.shape(0));
}
void host_Trilu(Lower& L) {
    const HostTensor& x = L.h(0);
    if (x.shape.size() < 2) L.error("Trilu needs rank >= 2");
    HostTensor m = trilu_mask(L, x.shape);
    HostTensor out = HostTensor::alloc(x.dtype, x.shape);
    size_t es = dtype_size(x.dtype);
    int64_t mc = m.numel();
    for (int64_t k = 0; k < out.numel(); k++)
        if (m.data[k % mc]) std::memcpy(out.mut() + size_t(k) * es, x.data + size_t(k) * es, es);
    L.out_host(0, std::move(out));
}
void host_EyeLike(Lower& L) {
    const Shape& s = L.shape(0);
    if (s.size() != 2) L.error("EyeLike needs rank 2");
    DType dt = L.node.has("dtype") ? DType(int32_t(L.node.get_int("dtype", 1))) : L.dtype(0);
    int64_t k = L.node.get_int("k", 0);
    HostTensor out = HostTensor::alloc(dt, s);
    for (int64_t i = 0; i < s[0]; i++)
        if (i + k >= 0 && i + k < s[1]) out.set_i64(i * s[1] + i + k, 1);
    L.out_host(0, std::move(out));
}
void lower_Dropout(Lower& L) {
    L.pass(0, 0);
    if (L.outs.size() > 1 && !L.node.outputs[1].empty()) {
        HostTensor m = HostTensor::alloc(DType::BOOL, L.shape(0));
        for (int64_t k = 0; k < m.numel(); k++) m.mut()[k] = 1;
        L.out_host(1, std::move(m));
    }
}

// ---- DepthToSpace / SpaceToDepth via rank-6 index maps on the host side of a gather ----
static std::vector<int64_t> d2s_map(Lower& L, const Shape& s, Shape& os) {
    int64_t N = s[0], C = s[1], H = s[2], W = s[3];
    int64_t b = L.node.get_int("blocksize", 1);
    bool d2s = L.node.op_type == "DepthToSpace";
    bool crd = L.node.get_string("mode", "DCR") == "CRD";
    std::vector<int64_t> map;
    if (d2s) {
        int64_t oc = C / (b * b);
        os = {N, oc, H * b, W * b};
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < oc; c++)
                for (int64_t y = 0; y < H * b; y++)
                    for (int64_t x = 0; x < W * b; x++) {
                        int64_t by = y % b, bx = x % b;
                        int64_t ic = crd ? c * b * b + by * b + bx : (by * b + bx) * oc + c;
                        map.push_back(((n * C + ic) * H + y / b) * W + x / b);
                    }
    } else {
        os = {N, C * b * b, H / b, W / b};
        for (int64_t n = 0; n < N; n++)
            for (int64_t oc = 0; oc < C * b * b; oc++)
                for (int64_t y = 0; y < H / b; y++)
                    for (int64_t x = 0; x < W / b; x++) {
                        int64_t c = oc % C, blk = oc / C, by = blk / b, bx = blk % b;
                        map.push_back(((n * C + c) * H + y * b + by) * W + x * b + bx);
                    }
    }
    return map;
}
void lower_DepthToSpace(Lower& L) {
    if (L.rank(0) != 4) L.error("expects rank 4");
    Shape os;
    auto map = d2s_map(L, L.shape(0), os);
    HostTensor m = HostTensor::from_i64(DType::INT32, {int64_t(map.size())}, map);
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), 1, shape_numel(L.shape(0)));
    L.out(0, reshape_to(L, ggml_get_rows(L.ctx, x, L.constant(m)), os), L.dtype(0), 4);
}
void host_DepthToSpace(Lower& L) {
    if (L.rank(0) != 4) L.error("expects rank 4");
    Shape os;
    auto map = d2s_map(L, L.shape(0), os);
    L.out_host(0, host_gather_flat(L.h(0), os, map));
}

}  // namespace onnx2ggml
