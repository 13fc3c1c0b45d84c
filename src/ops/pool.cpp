// Pooling ONNX ops: MaxPool (1-22) and AveragePool (1-22), 1-D to 3-D with dilations, GlobalAveragePool (1-22),
// GlobalMaxPool (1-22), LpPool (1-22), GlobalLpPool (2-22). Rows read attributes into params; the lowering is the op
// library's (src/lib/pool.cpp).
#include "ops/op.h"

namespace onnx2ggml {

namespace {

// The window attributes every pool reads (PoolParams and LpPoolParams alike).
template <class P>
P window_params(Lower& L) {
    const int sp = L.rank(0) - 2;
    if (sp < 1 || sp > 3) L.error("only 1-D to 3-D pooling is supported");
    P p;
    p.dims = sp;
    p.auto_pad = o2g::auto_pad_value(L.node.get_string("auto_pad", "NOTSET"));
    p.kernel = L.node.get_ints("kernel_shape");
    p.pads = L.node.get_ints("pads");
    p.strides = L.node.get_ints("strides");
    p.dilations = L.node.get_ints("dilations");
    p.ceil_mode = L.node.get_int("ceil_mode", 0) != 0;
    if (int(p.kernel.size()) != sp) L.error("kernel_shape has wrong length");
    return p;
}

// MaxPool / AveragePool attributes.
o2g::PoolParams pool_params(Lower& L) {
    o2g::PoolParams p = window_params<o2g::PoolParams>(L);
    p.count_include_pad = L.node.get_int("count_include_pad", 0) != 0;
    return p;
}

// A pooled result; rank 5 keeps N and C folded in ne[3].
void pool_out(Lower& L, ggml_tensor* y) {
    const Shape& xs = L.shape(0);
    if (xs.size() < 5) return L.out(0, y, L.dtype(0), int(xs.size()));
    L.out_shape(0, y, L.dtype(0), {xs[0], xs[1], y->ne[2], y->ne[1], y->ne[0]});
}

// Global pools keep N and C and reduce every spatial axis to 1.
void global_pool(Lower& L, ggml_tensor* (*fn)(o2g::Ctx&, ggml_tensor*, int), const char* name) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 3 || r > 5) L.error("expects rank 3 to 5");
    Shape os = {xs[0], xs[1]};
    for (int i = 2; i < r; i++) os.push_back(1);
    L.out_shape(0, L.call(name, fn, L.t(0), r - 2), L.dtype(0), os);
}

}  // namespace

void lower_MaxPool(Lower& L) {
    if (L.node.outputs.size() > 1 && !L.node.outputs[1].empty()) L.error("MaxPool Indices output is not supported");
    pool_out(L, O2G_CALL(L, o2g::max_pool, L.t(0), pool_params(L)));
}
void lower_AveragePool(Lower& L) { pool_out(L, O2G_CALL(L, o2g::avg_pool, L.t(0), pool_params(L))); }

void lower_GlobalAveragePool(Lower& L) { global_pool(L, o2g::global_avg_pool, "o2g::global_avg_pool"); }
void lower_GlobalMaxPool(Lower& L) { global_pool(L, o2g::global_max_pool, "o2g::global_max_pool"); }

// ---- LpPool (1/2/11/18/22), 1-D to 3-D ----
// p is a float attribute in opset 1 and an int from 2.
static void lp_pool(Lower& L, float pw) {
    const Shape& xs = L.shape(0);
    o2g::LpPoolParams p = window_params<o2g::LpPoolParams>(L);
    const int sp = p.dims;
    p.p = pw;
    if (!(p.p > 0)) L.error("p must be positive");
    ggml_tensor* y = O2G_CALL(L, o2g::lp_pool, L.t(0), p);
    if (sp < 3) return L.out(0, y, L.dtype(0), int(xs.size()));
    L.out_shape(0, y, L.dtype(0), {xs[0], xs[1], y->ne[2], y->ne[1], y->ne[0]});  // rank 5: N and C folded in ne[3]
}
void lower_LpPool_1(Lower& L) { lp_pool(L, L.node.get_float("p", 2.0f)); }
void lower_LpPool(Lower& L) { lp_pool(L, float(L.node.get_int("p", 2))); }

// ---- GlobalLpPool (2/22): LpPool's norm over every spatial axis; p is an int from opset 2 ----
void lower_GlobalLpPool(Lower& L) {
    const Shape& xs = L.shape(0);
    o2g::GlobalLpPoolParams p;
    p.dims = int(xs.size()) - 2;
    p.p = float(L.node.get_int("p", 2));
    Shape os = {xs[0], xs[1]};
    os.resize(xs.size(), 1);
    L.out_shape(0, O2G_CALL(L, o2g::global_lp_pool, L.t(0), p), L.dtype(0), os);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& pool_ops() {
    static const std::vector<OpDef> t = {
        {.op = "LpPool", .since = 1, .accepts = "in=1 out=1 r0=3..5 @kernel_shape:is>=1 @strides:is>=1 @auto_pad:s",
         .ggml = lower_LpPool_1, .math = true},
        {.op = "LpPool", .since = 2,
         .accepts = "in=1 out=1 r0=3..5 @kernel_shape:is>=1 @strides:is>=1 @dilations:is>=1 @auto_pad:s",
         .ggml = lower_LpPool, .math = true},
        {.op = "MaxPool", .since = 1,
         .accepts = "in=1 out=1..2 r0=3..5 @kernel_shape:is>=1 @strides:is>=1 @dilations:is>=1 @auto_pad:s",
         .ggml = lower_MaxPool, .math = true},
        {.op = "AveragePool", .since = 1,
         .accepts = "in=1 out=1 r0=3..5 @kernel_shape:is>=1 @strides:is>=1 @dilations:is>=1 @auto_pad:s",
         .ggml = lower_AveragePool, .math = true},
        {.op = "GlobalAveragePool", .since = 1, .accepts = "in=1 out=1", .ggml = lower_GlobalAveragePool, .math = true},
        {.op = "GlobalMaxPool", .since = 1, .accepts = "in=1 out=1", .ggml = lower_GlobalMaxPool, .math = true},
        {.op = "GlobalLpPool", .since = 2, .accepts = "in=1 out=1 r0=3..5 t0=float @p:i>=1", .ggml = lower_GlobalLpPool,
         .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
