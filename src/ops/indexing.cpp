// Indexing ops: Gather (1-13), GatherElements (11-13), GatherND (11-13), ScatterND (11-18), ScatterElements (11-18),
// Scatter (9), TensorScatter (24), Trilu (14), CumSum (11-14), CumProd (26), MaxUnpool (9-22), Col2Im (18).
// Index data must be known on the host; rows used for host evaluation too branch on the builder's host mode.
#include <algorithm>
#include <cstring>

#include "lib/index_maps.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

int scatter_reduction(Lower& L) {
    std::string s = L.node.get_string("reduction", "none");
    if (s == "none") return o2g::SCATTER_NONE;
    if (s == "add") return o2g::SCATTER_ADD;
    if (s == "mul") return o2g::SCATTER_MUL;
    if (s == "max") return o2g::SCATTER_MAX;
    if (s == "min") return o2g::SCATTER_MIN;
    L.error("unknown reduction '" + s + "'");
}

// Host ScatterND / ScatterElements: data with updates written (or reduced) at offs, in order.
void host_scatter(Lower& L, const std::vector<int64_t>& offs, int red) {
    const HostTensor& d = L.h(0);
    const HostTensor& u = L.h(2);
    if (u.numel() != int64_t(offs.size())) L.error("updates do not match the indices");
    HostTensor o = HostTensor::alloc(d.dtype, d.shape);
    if (o.nbytes) std::memcpy(o.mut(), d.data, o.nbytes);
    bool f = dtype_is_float(d.dtype);
    auto reduce = [red](auto a, auto b) -> decltype(a) {
        switch (red) {
            case o2g::SCATTER_ADD: return a + b;
            case o2g::SCATTER_MUL: return a * b;
            case o2g::SCATTER_MAX: return std::max(a, b);
            case o2g::SCATTER_MIN: return std::min(a, b);
            default: return b;
        }
    };
    for (size_t k = 0; k < offs.size(); k++) {
        if (f) o.set_f64(offs[k], reduce(o.f64(offs[k]), u.f64(int64_t(k))));
        else o.set_i64(offs[k], reduce(o.i64(offs[k]), u.i64(int64_t(k))));
    }
    L.out_host(0, o);
}

// Host MaxUnpool / Col2Im: values of input 0 placed into zeros at offs (-1 skips), added when `add`.
void host_place(Lower& L, const std::vector<int64_t>& offs, const Shape& os, bool add) {
    const HostTensor& x = L.h(0);
    HostTensor r = HostTensor::alloc(x.dtype, os);
    bool f = dtype_is_float(x.dtype);
    for (size_t k = 0; k < offs.size(); k++) {
        int64_t v = offs[k];
        if (v < 0) continue;
        if (f) r.set_f64(v, (add ? r.f64(v) : 0.0) + x.f64(int64_t(k)));
        else r.set_i64(v, (add ? r.i64(v) : 0) + x.i64(int64_t(k)));
    }
    L.out_host(0, r);
}

Shape gather_shape(const Shape& s, const Shape& is, int axis) {
    Shape os(s.begin(), s.begin() + axis);
    os.insert(os.end(), is.begin(), is.end());
    os.insert(os.end(), s.begin() + axis + 1, s.end());
    return os;
}

}  // namespace

// ---- Gather ----
void lower_Gather(Lower& L) {
    const Shape& s = L.shape(0);
    int r = int(s.size());
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    const Shape& is = L.shape(1);
    Shape os = gather_shape(s, is, axis);
    if (!L.in(1).host) {  // indices computed on the device: negative ones wrap, out-of-range ones are clamped
        ggml_tensor* y = O2G_CALL(L, o2g::gather_rows, L.t(0), L.t(1), o2g::GatherParams{gdim(r, axis), r});
        return L.out_shape(0, y, L.dtype(0), os);
    }
    const Sym idx = L.sym(1), ishape = L.shape_sym(1);
    int64_t A = s[size_t(axis)];
    for (int64_t v : idx.v)
        if (v < -A || v >= A) L.error("Gather index " + std::to_string(v) + " out of range");
    if (r <= 4) {
        ggml_tensor* y = O2G_CALL(L, o2g::gather, L.t(0), idx, ishape, o2g::GatherParams{gdim(r, axis), r});
        return L.out_shape(0, y, L.dtype(0), os);
    }
    // Rank > 4: gather on the input seen as [outer, A, inner], then reshape to the output.
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= s[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= s[size_t(i)];
    const Sym s3{{outer, A, inner}, nullptr}, out{os, nullptr};
    ggml_tensor* x = O2G_CALL(L, o2g::reshape, L.t(0), s3, o2g::ReshapeParams{r, false});
    ggml_tensor* y = O2G_CALL(L, o2g::gather, x, idx, ishape, o2g::GatherParams{1, 3});
    y = O2G_CALL(L, o2g::reshape, y, out, o2g::ReshapeParams{int(is.size()) + 2, false});
    L.out_shape(0, y, L.dtype(0), os);
}
void host_Gather(Lower& L) { O2G_HOST(L, 0, o2g::host_gather, L.hv(0), L.hv(1), L.node.get_int("axis", 0)); }

// ---- GatherElements ----
void host_GatherElements(Lower& L) {
    const HostTensor& x = L.h(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), int(x.shape.size()));
    const HostTensor& ih = L.h(1);
    L.out_host(0, host_gather_flat(x, ih.shape, o2g::element_offsets(x.shape, ih.to_i64(), ih.shape, axis, "GatherElements")));
}
void lower_GatherElements(Lower& L) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    const Shape& is = L.shape(1);
    const Sym idx = L.sym(1), ishape = L.shape_sym(1);
    ggml_tensor* y = O2G_CALL(L, o2g::gather_elements, L.t(0), idx, ishape,
                              o2g::GatherElementsParams{gdim(r, axis), r});
    L.out(0, y, L.dtype(0), int(is.size()));
}

// ---- GatherND ----
void lower_GatherND(Lower& L) {
    const Shape& is = L.shape(1);
    const Sym idx = L.sym(1), ishape = L.shape_sym(1);
    int64_t b = L.node.get_int("batch_dims", 0);
    o2g::RowMap m = o2g::gather_nd_rows(L.shape(0), idx.v, is, b);
    ggml_tensor* y = O2G_CALL(L, o2g::gather_nd, L.t(0), idx, ishape, o2g::GatherNDParams{L.rank(0), b});
    L.out(0, y, L.dtype(0), int(m.os.size()));
}
void host_GatherND(Lower& L) {
    O2G_HOST(L, 0, o2g::host_gather_nd, L.hv(0), L.hv(1), L.node.get_int("batch_dims", 0));
}

// ---- ScatterND, ScatterElements / Scatter (also host) ----
void lower_ScatterND(Lower& L) {
    const Shape& is = L.shape(1);
    const Sym idx = L.sym(1), ishape = L.shape_sym(1);
    int red = scatter_reduction(L);
    if (L.b.host_mode) return host_scatter(L, o2g::scatter_nd_offsets(L.shape(0), idx.v, is), red);
    ggml_tensor* y = O2G_CALL(L, o2g::scatter_nd, L.t(0), idx, ishape, L.t(2),
                              o2g::ScatterNDParams{L.rank(0), red});
    L.out(0, y, L.dtype(0), L.rank(0));
}

void lower_ScatterElements(Lower& L) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    const Shape& is = L.shape(1);
    const Sym idx = L.sym(1), ishape = L.shape_sym(1);
    int red = scatter_reduction(L);
    if (L.b.host_mode)
        return host_scatter(L, o2g::element_offsets(L.shape(0), idx.v, is, axis, "ScatterElements"), red);
    ggml_tensor* y = O2G_CALL(L, o2g::scatter_elements, L.t(0), idx, ishape, L.t(2),
                              o2g::ScatterElementsParams{gdim(r, axis), r, red});
    L.out(0, y, L.dtype(0), r);
}

// ---- TensorScatter (24): rows of the cache replaced by rows of the update at per-batch write indices ----
void lower_TensorScatter(Lower& L) {
    const Shape &cs = L.shape(0), &us = L.shape(1);
    int r = int(cs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -2), r);
    std::string mode = L.node.get_string("mode", "linear");
    if (mode != "linear" && mode != "circular") L.error("unknown mode '" + mode + "'");
    if (L.dtype(0) != L.dtype(1))  // one element type T (fuzz: the rows of a narrower update read past its end)
        L.error(std::string("the update is ") + dtype_name(L.dtype(1)) + ", the cache " + dtype_name(L.dtype(0)));
    const Sym wi = L.has(2) ? L.sym(2) : Sym{};
    o2g::RowMap m = o2g::tensor_scatter_rows(cs, us, wi.v, axis, mode == "circular");
    if (L.b.host_mode) {
        const HostTensor &c = L.h(0), &u = L.h(1);
        HostTensor o = HostTensor::alloc(c.dtype, cs);
        size_t row = size_t(m.inner) * dtype_size(c.dtype), ncr = m.rows.size();
        for (size_t i = 0; i < m.rows.size(); i++) {
            size_t k = size_t(m.rows[i]);
            const uint8_t* src = k < ncr ? c.data + k * row : u.data + (k - ncr) * row;
            if (row) std::memcpy(o.mut() + i * row, src, row);
        }
        return L.out_host(0, o);
    }
    if (shape_numel(us) == 0) return L.pass(0, 0);
    o2g::TensorScatterParams p{gdim(r, axis), r, mode == "circular"};
    L.out_shape(0, O2G_CALL(L, o2g::tensor_scatter, L.t(0), L.t(1), wi, p), L.dtype(0), cs);
}

// ---- Trilu ----
static Sym trilu_k(Lower& L) { return L.has(1) ? L.sym(1) : Sym{}; }
void lower_Trilu(Lower& L) {
    o2g::TriluParams p{L.node.get_int("upper", 1) != 0};
    const Sym k = trilu_k(L);
    L.out_shape(0, O2G_CALL(L, o2g::trilu, L.t(0), k, p), L.dtype(0), L.shape(0));
}
void host_Trilu(Lower& L) {
    O2G_HOST(L, 0, o2g::host_trilu, L.hv(0), trilu_k(L), o2g::HostTriluParams{L.node.get_int("upper", 1) != 0});
}

// ---- CumSum, CumProd ----
static o2g::CumParams cum_params(Lower& L, int& axis) {
    int r = L.rank(0);
    int d = L.param_axis(1, "axis", r);
    axis = r - 1 - d;
    return {d, L.node.get_int("exclusive", 0) != 0, L.node.get_int("reverse", 0) != 0};
}
// Host running sum (or product) along `axis`: integers in wrapping int64, floats in double.
static void host_cum(Lower& L, bool product) {
    o2g::HostCumParams p{L.node.get_int("exclusive", 0) != 0, L.node.get_int("reverse", 0) != 0, product};
    O2G_HOST(L, 0, o2g::host_cum, L.hv(0), L.sym(1), p);
}
void host_CumSum(Lower& L) { host_cum(L, false); }
void host_CumProd(Lower& L) { host_cum(L, true); }
void lower_CumSum(Lower& L) {
    int axis;
    o2g::CumParams p = cum_params(L, axis);
    if (L.rank(0) > 4) L.error("rank > 4 CumSum is not supported on the device");
    L.out(0, O2G_CALL(L, o2g::cumsum, L.t(0), p), L.dtype(0), L.rank(0));
}
void lower_CumProd(Lower& L) {
    int axis;
    o2g::CumParams p = cum_params(L, axis);
    if (L.rank(0) > 4) L.error("rank > 4 CumProd is not supported on the device");
    // Integer data keeps its I32 tensor (products wrap like int64), although CumProd computes floats.
    bool keep_int = dtype_is_integer(L.dtype(0)), math = L.b.current_math;
    if (keep_int) L.b.current_math = false;
    ggml_tensor* x = L.t(0);
    L.b.current_math = math;
    L.out_shape(0, O2G_CALL(L, o2g::cumprod, x, p), L.dtype(0), L.shape(0));
}

// ---- MaxUnpool (9-22), Col2Im (18): values placed into zeros (also host) ----
void lower_MaxUnpool(Lower& L) {
    o2g::MaxUnpoolParams p{L.node.get_ints("kernel_shape"), L.node.get_ints("strides"), L.node.get_ints("pads")};
    const Sym idx = L.sym(1);
    const Sym out = L.has(2) ? L.sym(2) : Sym{};
    Shape os;
    auto offs = o2g::max_unpool_offsets(L.shape(0), idx.v, out.v, p.kernel, p.strides, p.pads, os);
    if (L.b.host_mode) return host_place(L, offs, os, false);
    if (shape_numel(os) == 0) L.error("empty output; ggml cannot hold it");
    L.out_shape(0, O2G_CALL(L, o2g::max_unpool, L.t(0), idx, out, p), L.dtype(0), os);
}

void lower_Col2Im(Lower& L) {
    o2g::Col2ImParams p{L.node.get_ints("dilations"), L.node.get_ints("strides"), L.node.get_ints("pads")};
    const Sym img = L.sym(1), blk = L.sym(2);
    Shape os;
    auto offs = o2g::col2im_offsets(L.shape(0), img.v, blk.v, p.dilations, p.strides, p.pads, os);
    if (L.b.host_mode) return host_place(L, offs, os, true);
    if (shape_numel(os) == 0) L.error("empty output; ggml cannot hold it");
    L.out_shape(0, O2G_CALL(L, o2g::col2im, L.t(0), img, blk, p), L.dtype(0), os);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& indexing_ops() {
    static const std::vector<OpDef> t = {
        {.op = "GatherND", .since = 11, .accepts = "in=2 out=1 t1=int r0>=1 r1>=1 @batch_dims:i>=0 @batch_dims:i~r1",
         .ggml = lower_GatherND, .host = host_GatherND, .host_inputs = {1}},
        {.op = "ScatterND", .since = 11, .accepts = "in=3 out=1 t1=int r0>=1 r1>=1",
         .ggml = lower_ScatterND, .host = lower_ScatterND, .host_inputs = {1}},
        {.op = "ScatterElements", .since = 11, .accepts = "in=3 out=1 t1=int r0>=1 @axis:i~r0",
         .ggml = lower_ScatterElements, .host = lower_ScatterElements, .host_inputs = {1}},
        {.op = "Scatter", .since = 9, .accepts = "in=3 out=1 t1=int r0>=1 @axis:i~r0",
         .ggml = lower_ScatterElements, .host = lower_ScatterElements, .host_inputs = {1}},
        {.op = "TensorScatter", .since = 24, .accepts = "in=2..3 out=1",
         .ggml = lower_TensorScatter, .host = lower_TensorScatter, .host_inputs = {2}},
        {.op = "CumProd", .since = 26, .accepts = "in=2 out=1 t1=int r0>=1",
         .ggml = lower_CumProd, .host = host_CumProd, .host_inputs = {1}, .math = true},
        {.op = "Gather", .since = 1, .accepts = "in=2 out=1 t1=int r0>=1 @axis:i~r0",
         .ggml = lower_Gather, .host = host_Gather},
        {.op = "GatherElements", .since = 11, .accepts = "in=2 out=1 t1=int r0>=1 @axis:i~r0",
         .ggml = lower_GatherElements, .host = host_GatherElements, .host_inputs = {1}},
        {.op = "Trilu", .since = 14, .accepts = "in=1..2 out=1 r0>=2",
         .ggml = lower_Trilu, .host = host_Trilu, .host_inputs = {1}},
        {.op = "CumSum", .since = 11, .accepts = "in=2 out=1 t1=int r0>=1",
         .ggml = lower_CumSum, .host = host_CumSum, .host_inputs = {1}, .math = true},
        {.op = "MaxUnpool", .since = 9, .accepts = "in=2..3 out=1",
         .ggml = lower_MaxUnpool, .host = lower_MaxUnpool, .host_inputs = {1, 2}},
        {.op = "Col2Im", .since = 18, .accepts = "in=3 out=1",
         .ggml = lower_Col2Im, .host = lower_Col2Im, .host_inputs = {1, 2}, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
