// Shape ops: Shape, Size (host), Reshape (1-23), Flatten (1-23), Squeeze (1-23), Unsqueeze (1-23).
#include <algorithm>

#include "ops/host.h"

namespace onnx2ggml {

namespace {

HostTensor make_i64(const std::vector<int64_t>& v) { return HostTensor::from_i64(DType::INT64, {int64_t(v.size())}, v); }

// Squeeze and Unsqueeze axes: the attribute before opset 13, input 1 from 13.
Sym squeeze_axes_input(Lower& L) { return L.has(1) ? L.sym(1) : Sym{}; }

// Output `s` of a reshape-like op: host data stays on the host; rank > 4 (folded dims) reshapes to the literal
// shape; otherwise `call` makes the op-library call.
template <typename F>
void reshape_like(Lower& L, const Shape& s, F call) {
    Val& x = L.in(0);
    const Sym shape{s, nullptr};
    ggml_tensor* y = L.rank(0) > 4 || s.size() > 4
                         ? O2G_CALL(L, o2g::reshape, L.t(0), shape, o2g::ReshapeParams{L.rank(0), false})
                         : call();
    L.out_shape(0, y, x.dtype, s);
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

// ---- Reshape family (each row also evaluates host data) ----
// Reshape-1 takes the shape as an attribute, 5 as input 1 (allowzero from 14).
static void reshape_out(Lower& L, const Sym& given, bool allowzero) {
    Val& x = L.in(0);
    if (x.host) return O2G_HOST(L, 0, o2g::host_reshape, L.hv(0), given, o2g::HostReshapeParams{allowzero});
    Shape s = o2g::reshape_target(L.shape(0), given.v, allowzero);
    int r = L.rank(0);
    const o2g::ReshapeParams p{r, allowzero};
    if (r <= 4 && s.size() <= 4) return L.out_shape(0, O2G_CALL(L, o2g::reshape, L.t(0), given, p), x.dtype, s);
    // Folded dims (rank > 4): ne cannot tell the ONNX shapes, so they travel as shape statements in compiled code.
    ggml_tensor* y = O2G_CALL(L, o2g::reshape_as, L.t(0), L.shape_sym(0), given, p);
    if (s.size() > 4) return O2G_OUT_SHAPE(L, 0, y, x.dtype, o2g::reshape_target, L.shape_sym(0), given, allowzero);
    L.out_shape(0, y, x.dtype, s);
}

void lower_Reshape_1(Lower& L) { reshape_out(L, Sym{L.node.get_ints("shape"), nullptr}, false); }
void lower_Reshape(Lower& L) { reshape_out(L, L.sym(1), L.node.get_int("allowzero", 0) != 0); }

void lower_Flatten(Lower& L) {
    const Shape& in = L.shape(0);
    int r = int(in.size());
    int64_t axis = L.node.get_int("axis", 1);
    if (L.in(0).host) return O2G_HOST(L, 0, o2g::host_flatten, L.hv(0), axis);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) L.error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
    int64_t a = 1;
    for (int i = 0; i < axis; i++) a *= in[size_t(i)];
    Shape s = {a, shape_numel(in) / std::max<int64_t>(a, 1) * (a == 0 ? 0 : 1)};
    reshape_like(L, s, [&] { return O2G_CALL(L, o2g::flatten, L.t(0), o2g::FlattenParams{r, int(r - axis)}); });
}

static void squeeze_out(Lower& L, const Sym& axes_in) {
    const Shape& in = L.shape(0);
    int r = int(in.size());
    if (L.in(0).host) return O2G_HOST(L, 0, o2g::host_squeeze, L.hv(0), axes_in);
    const std::vector<int64_t>& axes = axes_in.v;
    std::vector<bool> drop(in.size(), false);
    if (axes.empty())
        for (size_t i = 0; i < in.size(); i++) drop[i] = in[i] == 1;
    for (int64_t a : axes) {
        int ax = norm_axis(L, a, r);
        if (in[size_t(ax)] != 1) L.error("Squeeze: dim " + std::to_string(ax) + " is not 1");
        drop[size_t(ax)] = true;
    }
    Shape s;
    for (int i = 0; i < r; i++)
        if (!drop[size_t(i)]) s.push_back(in[size_t(i)]);
    if (r <= 4) return reshape_like(L, s, [&] { return O2G_CALL(L, o2g::squeeze, L.t(0), axes_in, o2g::SqueezeParams{r}); });
    ggml_tensor* y = O2G_CALL(L, o2g::squeeze_as, L.t(0), L.shape_sym(0), axes_in);
    if (s.size() > 4) return O2G_OUT_SHAPE(L, 0, y, L.dtype(0), o2g::squeeze_shape, L.shape_sym(0), axes_in);
    L.out_shape(0, y, L.dtype(0), s);
}

void lower_Squeeze_1(Lower& L) { squeeze_out(L, axes_attr(L)); }
void lower_Squeeze(Lower& L) { squeeze_out(L, squeeze_axes_input(L)); }

static void unsqueeze_out(Lower& L, const Sym& axes_in) {
    if (L.in(0).host) return O2G_HOST(L, 0, o2g::host_unsqueeze, L.hv(0), axes_in);
    const Shape s = o2g::unsqueeze_shape(L.shape(0), axes_in.v);
    if (L.rank(0) > 4)  // folded input dims: reshape to the literal shape
        return L.out_shape(0, O2G_CALL(L, o2g::reshape, L.t(0), Sym{s, nullptr}, o2g::ReshapeParams{L.rank(0), false}),
                           L.dtype(0), s);
    ggml_tensor* y = O2G_CALL(L, o2g::unsqueeze, L.t(0), axes_in, o2g::UnsqueezeParams{L.rank(0)});
    if (s.size() > 4) return O2G_OUT_SHAPE(L, 0, y, L.dtype(0), o2g::unsqueeze_shape, L.shape_sym(0), axes_in);
    L.out_shape(0, y, L.dtype(0), s);
}

void lower_Unsqueeze_1(Lower& L) { unsqueeze_out(L, axes_attr(L)); }
void lower_Unsqueeze(Lower& L) { unsqueeze_out(L, L.sym(1)); }

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& shape_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Shape", .since = 1, .accepts = "in=1 out=1", .host = host_Shape, .shape_only = true},
        {.op = "Size", .since = 1, .accepts = "in=1 out=1", .host = host_Size, .shape_only = true},
        {.op = "Reshape", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Reshape_1, .host = lower_Reshape_1},
        {.op = "Reshape", .since = 5, .accepts = "in=2 out=1 t1=int",
         .ggml = lower_Reshape, .host = lower_Reshape, .host_inputs = {1}},
        {.op = "Flatten", .since = 1, .accepts = "in=1 out=1 @axis:i~r0+",
         .ggml = lower_Flatten, .host = lower_Flatten},
        {.op = "Squeeze", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Squeeze_1, .host = lower_Squeeze_1},
        {.op = "Squeeze", .since = 13, .accepts = "in=1..2 out=1",
         .ggml = lower_Squeeze, .host = lower_Squeeze, .host_inputs = {1}},
        {.op = "Unsqueeze", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Unsqueeze_1, .host = lower_Unsqueeze_1},
        {.op = "Unsqueeze", .since = 13, .accepts = "in=2 out=1",
         .ggml = lower_Unsqueeze, .host = lower_Unsqueeze, .host_inputs = {1}},
    };
    return t;
}

}  // namespace onnx2ggml
