// Ops that select by value: TopK (1-11), Compress (9-11), and the host-only NonZero (9-13), OneHot (9-11) and
// Unique (11), whose output shapes depend on the data; their host work is in src/lib/host_selection.cpp.
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
    o2g::HostTopKParams p;
    int axis;
    const Sym k = topk_params(L, given, axis, p.largest);
    p.axis = axis;
    O2G_HOST(L, 0, o2g::host_topk, L.hv(0), k, p);
    p.indices = true;
    if (want(L, 1)) O2G_HOST(L, 1, o2g::host_topk, L.hv(0), k, p);
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

// ---- OneHot, NonZero, Unique (host: the output shapes depend on the values) ----
void host_OneHot(Lower& L) {
    int axis = norm_axis(L, L.node.get_int("axis", -1), L.rank(0) + 1);
    O2G_HOST(L, 0, o2g::host_one_hot, L.hv(0), L.hv(1), L.hv(2), int64_t(axis));
}

void host_NonZero(Lower& L) { O2G_HOST(L, 0, o2g::host_nonzero, L.hv(0)); }

void host_Unique(Lower& L) {
    o2g::HostUniqueParams p;
    p.has_axis = L.node.has("axis");
    if (p.has_axis) p.axis = norm_axis(L, L.node.get_int("axis", 0), L.rank(0));
    p.sorted = L.node.get_int("sorted", 1) != 0;
    for (int i = 0; i < 4; i++) {
        if (!want(L, size_t(i))) continue;
        p.output = i;  // outputs Y, indices, inverse_indices, counts: o2g::HostUniqueOutput
        O2G_HOST(L, i, o2g::host_unique, L.hv(0), p);
    }
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& selection_ops() {
    static const std::vector<OpDef> t = {
        {.op = "TopK", .since = 1, .accepts = "in=1 out=2 r0>=1 @axis:i~r0", .ggml = lower_TopK_1, .host = host_TopK_1},
        {.op = "TopK", .since = 10, .accepts = "in=2 out=2 r0>=1 @axis:i~r0",
         .ggml = lower_TopK, .host = host_TopK, .host_inputs = {1}},
        {.op = "OneHot", .since = 9, .accepts = "in=3 out=1 @axis:i~r0+", .host = host_OneHot, .host_inputs = {0,1,2}},
        {.op = "NonZero", .since = 9, .accepts = "in=1 out=1", .host = host_NonZero, .host_inputs = {0}},
        {.op = "Compress", .since = 9, .accepts = "in=2 out=1 @axis:i~r0",
         .ggml = lower_Compress, .host = lower_Compress, .host_inputs = {1}},
        {.op = "Unique", .since = 11, .accepts = "in=1 out=1..4 @axis:i~r0", .host = host_Unique, .host_inputs = {0}},
    };
    return t;
}

}  // namespace onnx2ggml
