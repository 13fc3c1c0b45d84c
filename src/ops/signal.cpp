// Signal ONNX ops: DFT (17, 20), STFT (17), HannWindow, HammingWindow, BlackmanWindow (17), MelWeightMatrix (17).
#include "ops/fold.h"
#include "ops/host.h"

namespace onnx2ggml {

namespace {

using WindowFn = ggml_tensor* (*)(o2g::Ctx&, const o2g::Ints&, const o2g::WindowParams&);

void lower_window(Lower& L, const char* name, WindowFn fn) {
    DType dt = DType(L.node.get_int("output_datatype", 1));
    if (!dtype_is_float(dt)) L.error("only float output_datatype is supported");
    if (shape_numel(L.shape(0)) != 1) L.error("size must be a scalar");
    const Sym size = L.sym(0);
    o2g::WindowParams p{L.node.get_int("periodic", 1) != 0};
    L.out(0, L.call(name, fn, size, p), dt, 1);
}

}  // namespace

// ---- DFT (17: axis attribute, default 1; 20: axis input 2, default -2) ----
static void dft(Lower& L, int64_t axis) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 2 || (xs.back() != 1 && xs.back() != 2)) L.error("input must end in a dimension of 1 or 2");
    int ax = norm_axis(L, axis, r);
    if (ax == r - 1) L.error("axis cannot be the last (complex) dimension");
    const Sym len = L.has(1) ? L.sym(1) : Sym{};
    if (L.has(1) && (len.v.size() != 1 || len.v[0] <= 0)) L.error("dft_length must be a positive scalar");
    o2g::DFTParams p{gdim(r, ax), L.node.get_int("inverse", 0) != 0, L.node.get_int("onesided", 0) != 0};
    ggml_tensor* x = L.t(0);
    // Rank > 4 with the axis among the folded outer dims: view x as [outer, A, inner, complex].
    bool fold = r > 4 && p.axis >= 3;
    if (fold) {
        size_t a = size_t(ax);
        x = reshape_ne(L, x, {dims_prod(xs, 0, a), xs[a], dims_prod(xs, a + 1, xs.size() - 1), xs.back()});
        p.axis = 2;
    }
    ggml_tensor* y = O2G_CALL(L, o2g::dft, x, len, p);
    Shape os = xs;
    os[size_t(ax)] = y->ne[p.axis];
    os.back() = y->ne[0];
    if (fold) y = reshape_ne(L, y, os);
    L.out_shape(0, y, L.dtype(0), os);
}
void lower_DFT_17(Lower& L) { dft(L, L.node.get_int("axis", 1)); }
void lower_DFT(Lower& L) {
    if (!L.has(2)) return dft(L, -2);
    if (shape_numel(L.shape(2)) != 1) L.error("axis must be a scalar");
    // Rank <= 4: the axis reaches o2g::dft as data (params field). Rank > 4 folds dims around it, so it is read here.
    if (L.rank(0) > 4) return dft(L, L.ints(2)[0]);
    dft(L, L.rank(0) - 1 - L.param_axis(2, "axis", L.rank(0)));
}

// ---- STFT (17) ----
void lower_STFT(Lower& L) {
    const Shape& xs = L.shape(0);
    if (xs.size() != 3 || (xs[2] != 1 && xs[2] != 2)) L.error("signal must be [batch, length, 1 or 2]");
    if (L.has(2) && L.rank(2) != 1) L.error("window must be 1-D");
    const Sym step = L.sym(1);
    const Sym flen = L.has(3) ? L.sym(3) : Sym{};
    ggml_tensor* x = L.t(0);
    ggml_tensor* win = L.has(2) ? L.t(2) : nullptr;
    o2g::STFTParams p{L.node.get_int("onesided", 1) != 0};
    ggml_tensor* y = O2G_CALL(L, o2g::stft, x, step, win, flen, p);
    L.out_shape(0, y, L.dtype(0), {xs[0], y->ne[2], y->ne[1], 2});
}

// ---- HannWindow, HammingWindow, BlackmanWindow (17) ----
void lower_HannWindow(Lower& L) { lower_window(L, "o2g::hann_window", o2g::hann_window); }
void lower_HammingWindow(Lower& L) { lower_window(L, "o2g::hamming_window", o2g::hamming_window); }
void lower_BlackmanWindow(Lower& L) { lower_window(L, "o2g::blackman_window", o2g::blackman_window); }

// ---- MelWeightMatrix (17) ----
void lower_MelWeightMatrix(Lower& L) {
    for (int i = 0; i < 5; i++)
        if (shape_numel(L.shape(i)) != 1) L.error("input " + std::to_string(i) + " must be a scalar");
    DType dt = DType(L.node.get_int("output_datatype", 1));
    if (!dtype_is_float(dt)) L.error("only float output_datatype is supported");
    const Sym bins = L.sym(0), dft = L.sym(1), rate = L.sym(2);
    o2g::MelWeightMatrixParams p{L.param_float(3, "lower_edge_hertz"), L.param_float(4, "upper_edge_hertz")};
    L.out(0, O2G_CALL(L, o2g::mel_weight_matrix, bins, dft, rate, p), dt, 2);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& signal_ops() {
    static const std::vector<OpDef> t = {
        {.op = "HannWindow", .since = 17, .accepts = "in=1 out=1",
         .ggml = lower_HannWindow, .host_inputs = {0}, .math = true},
        {.op = "HammingWindow", .since = 17, .accepts = "in=1 out=1",
         .ggml = lower_HammingWindow, .host_inputs = {0}, .math = true},
        {.op = "BlackmanWindow", .since = 17, .accepts = "in=1 out=1",
         .ggml = lower_BlackmanWindow, .host_inputs = {0}, .math = true},
        {.op = "MelWeightMatrix", .since = 17, .accepts = "in=5 out=1",
         .ggml = lower_MelWeightMatrix, .host_inputs = {0,1,2,3,4}, .math = true},
        {.op = "DFT", .since = 17, .accepts = "in=1..2 out=1", .ggml = lower_DFT_17, .host_inputs = {1}, .math = true},
        {.op = "DFT", .since = 20, .accepts = "in=1..3 out=1", .ggml = lower_DFT, .host_inputs = {1, 2}, .math = true},
        {.op = "STFT", .since = 17, .accepts = "in=2..4 out=1",
         .ggml = lower_STFT, .host_inputs = {1, 3}, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
