// Op library: indexing (see include/onnx2ggml/ops/indexing.h). Index data known at build time becomes row tables
// for ggml_get_rows; scatters, TopK and running products run our CPU kernels (kernels/indexing.h).
#include <algorithm>
#include <string>

#include "kernels/custom.h"
#include "kernels/indexing.h"
#include "lib/index_maps.h"
#include "lib/row_gather.h"

namespace o2g {

namespace {

ggml_tensor* offsets_tensor(Ctx& ctx, const Ints& offs) {
    std::vector<int32_t> v(offs.begin(), offs.end());
    const int64_t ne[4] = {int64_t(v.size()), 1, 1, 1};
    return ctx.constant(GGML_TYPE_I32, ne, v.data(), v.size() * 4);
}

ggml_tensor* scatter(Ctx& ctx, ggml_tensor* x, ggml_tensor* updates, const Ints& offs, int red, const char* op) {
    if (red < SCATTER_NONE || red > SCATTER_MIN) throw OpError(std::string(op) + ": unknown reduction");
    ggml_tensor* d = cont(ctx, x);
    ggml_tensor* u = cont(ctx, updates);
    if (u->type != d->type) u = ggml_cast(ctx, u, d->type);
    if (ggml_nelements(u) != int64_t(offs.size()))
        throw OpError(std::string(op) + ": " + std::to_string(ggml_nelements(u)) + " updates for " +
                      std::to_string(offs.size()) + " indexed elements");
    ggml_tensor* y = scatter_kernel(ctx, d, u, offsets_tensor(ctx, offs), red);
    ctx.label(y, "scatter");
    return y;
}

}  // namespace

// ---- gathers ----

// An fp16 file's embedding table is read as f16 (get_rows widens only the rows it gathers: 77 of CLIP's 49408),
// not widened whole once (152 MB); x itself where the weight store keeps no such form.
static ggml_tensor* f16_rows(Ctx& ctx, ggml_tensor* x) {
    ggml_tensor* half = ctx.weights && ctx.cpu ? ctx.weights->f16_source(x) : nullptr;
    return half ? half : x;
}

ggml_tensor* gather(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape, const GatherParams& p) {
    int g = p.axis;
    if (g < 0 || g > 3 || (p.rank > 4 && g == 3)) throw OpError("Gather: axis out of range of ggml's dims");
    if (prod(indices_shape) != int64_t(indices.size())) throw OpError("Gather: indices do not match their shape");
    Ints idx = indices;
    for (auto& v : idx) v = wrap_index(v, x->ne[g], "Gather");
    ggml_tensor* y = gather_dim(ctx, f16_rows(ctx, x), g, idx);
    if (p.rank > 4) return y;
    Ints xs = onnx_shape(x, p.rank, "Gather"), os;
    int a = p.rank - 1 - g;
    os.insert(os.end(), xs.begin(), xs.begin() + a);
    os.insert(os.end(), indices_shape.begin(), indices_shape.end());
    os.insert(os.end(), xs.begin() + a + 1, xs.end());
    int64_t ne[4];
    fold_ne(os, ne);
    return reshape_ne(ctx, y, ne);
}

ggml_tensor* gather_rows(Ctx& ctx, ggml_tensor* x, ggml_tensor* indices, const GatherParams& p) {
    int g = p.axis;
    if (g < 0 || g > 3) throw OpError("Gather: axis out of range of ggml's dims");
    int64_t inner = 1, outer = 1;
    for (int d = 0; d < g; d++) inner *= x->ne[d];
    for (int d = g + 1; d < 4; d++) outer *= x->ne[d];
    if (outer != 1) throw OpError("Gather with device indices is supported on axis 0 only");
    int64_t ne[4] = {1, 1, 1, 1};
    for (int d = 0; d < g; d++) ne[d] = x->ne[d];
    for (int d = 0; d < 4; d++) {
        if (g + d < 4) ne[g + d] = indices->ne[d];
        else if (indices->ne[d] != 1) throw OpError("Gather: output rank above 4");
    }
    x = f16_rows(ctx, x);
    ggml_tensor* x2 = ggml_reshape_2d(ctx, cont(ctx, x), inner, x->ne[g]);
    ggml_tensor* idx = ggml_reshape_1d(ctx, cont(ctx, indices), ggml_nelements(indices));
    // Indices computed on the device cannot be checked before the run, and ggml_get_rows aborts the process on one
    // out of range: negative ones wrap as ONNX says (i + A for i in [-A, 0)), and the rest are clamped (in F32, where
    // the device does integer math; exact below 2^24 rows).
    if (idx->type != GGML_TYPE_F32) idx = ggml_cast(ctx, idx, GGML_TYPE_F32);
    const float A = float(x->ne[g]);
    ggml_tensor* t = ggml_clamp(ctx, idx, -A, A - 1);
    ggml_tensor* neg = ggml_clamp(ctx, ggml_scale(ctx, t, -1.0f), 0.0f, 1.0f);  // 1 where t < 0
    idx = ggml_cast(ctx, ggml_add(ctx, t, ggml_scale(ctx, neg, A)), GGML_TYPE_I32);
    return reshape_ne(ctx, ggml_get_rows(ctx, x2, idx), ne);
}

ggml_tensor* gather_elements(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape,
                             const GatherElementsParams& p) {
    Ints xs = onnx_shape(x, p.rank, "GatherElements");
    Ints offs = element_offsets(xs, indices, indices_shape, p.rank - 1 - p.axis, "GatherElements");
    int64_t ne[4];
    fold_ne(indices_shape, ne);
    return take_rows(ctx, x, 1, offs, ne);
}

namespace {
ggml_tensor* take(Ctx& ctx, ggml_tensor* x, const RowMap& m) {
    int64_t ne[4];
    fold_ne(m.os, ne);
    return take_rows(ctx, x, m.inner, m.rows, ne);
}
}  // namespace

ggml_tensor* gather_nd(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& is, const GatherNDParams& p) {
    return take(ctx, x, gather_nd_rows(onnx_shape(x, p.rank, "GatherND"), indices, is, p.batch_dims));
}

ggml_tensor* compress(Ctx& ctx, ggml_tensor* x, const Ints& condition, const CompressParams& p) {
    int axis = p.axis < 0 ? -1 : p.rank - 1 - p.axis;
    return take(ctx, x, compress_rows(onnx_shape(x, p.rank, "Compress"), condition, axis));
}

// ---- scatters ----

ggml_tensor* scatter_nd(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& is, ggml_tensor* updates,
                        const ScatterNDParams& p) {
    Ints offs = scatter_nd_offsets(onnx_shape(x, p.rank, "ScatterND"), indices, is);
    return scatter(ctx, x, updates, offs, p.reduction, "ScatterND");
}

ggml_tensor* scatter_elements(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape,
                              ggml_tensor* updates, const ScatterElementsParams& p) {
    Ints ds = onnx_shape(x, p.rank, "ScatterElements");
    Ints offs = element_offsets(ds, indices, indices_shape, p.rank - 1 - p.axis, "ScatterElements");
    return scatter(ctx, x, updates, offs, p.reduction, "ScatterElements");
}

ggml_tensor* tensor_scatter(Ctx& ctx, ggml_tensor* cache, ggml_tensor* update, const Ints& write_indices,
                            const TensorScatterParams& p) {
    Ints cs = onnx_shape(cache, p.rank, "TensorScatter"), us = onnx_shape(update, p.rank, "TensorScatter");
    RowMap m = tensor_scatter_rows(cs, us, write_indices, p.rank - 1 - p.axis, p.circular);
    if (prod(us) == 0) return cache;
    int64_t rows = prod(cs) / m.inner;
    ggml_tensor* c = ggml_reshape_2d(ctx, cont(ctx, cache), m.inner, rows);
    ggml_tensor* u = cont(ctx, update);
    if (u->type != c->type) u = ggml_cast(ctx, u, c->type);
    u = ggml_reshape_2d(ctx, u, m.inner, prod(us) / m.inner);
    ggml_tensor* y = ggml_get_rows(ctx, ggml_concat(ctx, c, u, 1), offsets_tensor(ctx, m.rows));
    int64_t ne[4] = {cache->ne[0], cache->ne[1], cache->ne[2], cache->ne[3]};
    return reshape_ne(ctx, y, ne);
}

// ---- TopK: a row kernel along ggml dim 0, with the axis moved there and back ----

ggml_tensor* topk(Ctx& ctx, ggml_tensor* x, const Ints& k, const TopKParams& p) {
    if (k.size() != 1) throw OpError("TopK: K must hold one value");
    if (p.axis < 0 || p.axis >= std::max(p.rank, 1) || p.rank > 4) throw OpError("TopK: axis out of range");
    int64_t K = k[0];
    if (K <= 0 || K > x->ne[p.axis])
        throw OpError("TopK: K = " + std::to_string(K) + " for a dim of " + std::to_string(x->ne[p.axis]));
    // ggml perm moving dim `axis` to dim 0 (ONNX: the axis last), and back.
    int r = std::max(p.rank, 1);
    Ints to(static_cast<size_t>(r)), back(static_cast<size_t>(r));
    to[0] = p.axis;
    for (int d = 0, j = 1; d < r; d++)
        if (d != p.axis) to[size_t(j++)] = d;
    for (int d = 0; d < r; d++) back[size_t(to[size_t(d)])] = d;
    ggml_tensor* xt = cont(ctx, transpose(ctx, x, {to}));
    if (xt->type != GGML_TYPE_F32) xt = ggml_cast(ctx, xt, GGML_TYPE_F32);
    ggml_tensor* y = topk_kernel(ctx, xt, K, p.largest, p.indices);
    ctx.label(y, "topk");
    return transpose(ctx, y, {back});
}

// ---- Trilu, CumProd ----

ggml_tensor* trilu(Ctx& ctx, ggml_tensor* x, const Ints& k, const TriluParams& p) {
    if (k.size() > 1) throw OpError("Trilu: k must hold one value");
    int64_t kk = k.empty() ? 0 : k[0], C = x->ne[0], R = x->ne[1];
    std::vector<float> m(size_t(R * C));
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) m[size_t(i * C + j)] = (p.upper ? j - i >= kk : j - i <= kk) ? 1.f : 0.f;
    const int64_t ne[4] = {C, R, 1, 1};
    return ggml_mul(ctx, x, ctx.constant_f32(ne, m));
}

namespace {

ggml_tensor* place(Ctx& ctx, ggml_tensor* x, const Ints& os, const Ints& offs, bool add, const char* op) {
    int64_t ne[4];
    fold_ne(os, ne);
    if (prod(os) == 0) throw OpError(std::string(op) + ": empty output; ggml cannot hold it");
    ggml_tensor* y = place_kernel(ctx, cont(ctx, x), offsets_tensor(ctx, offs), ne, add);
    ctx.label(y, "scatter");
    return y;
}

}  // namespace

ggml_tensor* cumprod(Ctx& ctx, ggml_tensor* x, const CumParams& p) {
    if (p.axis < 0 || p.axis > 3) throw OpError("CumProd: axis out of range");
    CumKernelParams k{1, x->ne[p.axis], 1, p.exclusive, p.reverse};
    for (int d = 0; d < p.axis; d++) k.inner *= x->ne[d];
    for (int d = p.axis + 1; d < 4; d++) k.outer *= x->ne[d];
    x = cont(ctx, x);
    if (x->type != GGML_TYPE_F32 && x->type != GGML_TYPE_I32) x = ggml_cast(ctx, x, GGML_TYPE_F32);
    ggml_tensor* y = cumprod_kernel(ctx, x, k);
    ctx.label(y, "cumprod");
    return y;
}

ggml_tensor* cumsum(Ctx& ctx, ggml_tensor* x, const CumParams& p) {
    if (p.axis < 0 || p.axis > 3) throw OpError("CumSum: axis out of range");
    // ggml_cumsum runs along dim 0: move the axis there and back; reverse by flipping with a row gather.
    Ints to = {p.axis}, back(4);
    for (int d = 0; d < 4; d++)
        if (d != p.axis) to.push_back(d);
    for (int d = 0; d < 4; d++) back[size_t(to[size_t(d)])] = d;
    x = transpose(ctx, x, {to});
    int64_t n = x->ne[0];
    auto flip = [&](ggml_tensor* v) {
        Ints idx(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; i++) idx[size_t(i)] = n - 1 - i;
        ggml_tensor* t = ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, v, n, ggml_nelements(v) / n)));
        t = ggml_get_rows(ctx, t, offsets_tensor(ctx, idx));
        return ggml_reshape_4d(ctx, ggml_cont(ctx, ggml_transpose(ctx, t)), v->ne[0], v->ne[1], v->ne[2], v->ne[3]);
    };
    if (p.reverse) x = flip(x);
    ggml_tensor* y = ggml_cumsum(ctx, x);
    if (p.exclusive) y = ggml_sub(ctx, y, x);
    if (p.reverse) y = flip(y);
    return transpose(ctx, y, {back});
}

// ---- MaxUnpool, Col2Im: values placed into a zero output ----

ggml_tensor* max_unpool(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& output_shape,
                        const MaxUnpoolParams& p) {
    size_t n = p.kernel.size();
    if (n < 1 || n > 3) throw OpError("MaxUnpool: 1 to 3 spatial dims");
    // Three spatial dims fold N and C into ne[3]: unpool as [1, N*C, ...], which has the same flat offsets.
    Ints xs, out = output_shape;
    if (n <= 2) {
        xs = onnx_shape(x, int(n) + 2, "MaxUnpool");
    } else {
        xs = {1, x->ne[3], x->ne[2], x->ne[1], x->ne[0]};
        if (!out.empty()) {
            if (out.size() != 5 || out[0] * out[1] != x->ne[3])
                throw OpError("MaxUnpool: output_shape must keep the input's batch and channel dims");
            out[1] *= out[0];
            out[0] = 1;
        }
    }
    Ints os;
    Ints offs = max_unpool_offsets(xs, indices, out, p.kernel, p.strides, p.pads, os);
    return place(ctx, x, os, offs, false, "MaxUnpool");
}

ggml_tensor* col2im(Ctx& ctx, ggml_tensor* x, const Ints& img, const Ints& blk, const Col2ImParams& p) {
    Ints os;
    Ints offs = col2im_offsets(onnx_shape(x, 3, "Col2Im"), img, blk, p.dilations, p.strides, p.pads, os);
    return place(ctx, x, os, offs, true, "Col2Im");
}

}  // namespace o2g
