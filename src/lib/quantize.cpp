// Op library: quantization (see include/onnx2ggml/ops/quantize.h).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/custom.h"
#include "kernels/quantize.h"

namespace o2g {

namespace {

// A custom kernel over contiguous arguments with output ne `ne`.
ggml_tensor* kcall(Ctx& ctx, ggml_type type, const int64_t ne[4], std::vector<ggml_tensor*> args, ggml_custom_op_t fn,
                   void* ud, int ntasks = GGML_N_TASKS_MAX) {
    for (auto& a : args) a = cont(ctx, a);
    if (ne[0] * ne[1] * ne[2] * ne[3] == 0) throw OpError("empty output; ggml cannot hold it");
    return ggml_custom_4d(ctx, type, ne[0], ne[1], ne[2], ne[3], args.data(), int(args.size()), fn, ntasks, ud);
}

ggml_tensor* quant(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* zp, int axis, int64_t block,
                   bool dequant, double lo, double hi) {
    QuantKernelParams k{dequant, 1, 1, 0, 1, zp != nullptr, lo, hi};
    if (zp && !same_ne(zp, scale) && !(ggml_nelements(zp) == 1 && ggml_nelements(scale) == 1))
        throw OpError("zero point and scale shapes differ");
    int64_t ns = ggml_nelements(scale);
    if (!(ns == 1 && block == 0)) {
        if (axis < 0 || axis > 3) throw OpError("axis " + std::to_string(axis) + " is not a ggml dim");
        k.A = x->ne[axis];
        for (int i = 0; i < axis; i++) k.inner *= x->ne[i];
        k.nscale = ns;
        if (block > 0) {
            for (int i = 0; i < 4; i++)
                if (i != axis ? scale->ne[i] != x->ne[i] : scale->ne[i] != (k.A + block - 1) / block)
                    throw OpError("scale ne[" + std::to_string(i) + "] = " + std::to_string(scale->ne[i]) + " does not match blocks of " +
                                  std::to_string(block));
            k.block = block;
        } else if (ns != k.A || scale->ne[0] != k.A) {
            throw OpError("per-axis scale must be 1-D with the axis' size " + std::to_string(k.A));
        }
    }
    std::vector<ggml_tensor*> args = {cont(ctx, x), f32_cont(ctx, scale)};
    if (zp) args.push_back(cont(ctx, zp));
    return kcall(ctx, dequant ? GGML_TYPE_F32 : GGML_TYPE_I32, x->ne, args, quant_kernel, keep_params(k));
}

// Scale / zero point mode: 0 absent, 1 per tensor, 2 one per row (a) or column (b) of `per`.
int per_mode(const ggml_tensor* t, int64_t per, const char* what) {
    if (!t) return 0;
    int64_t n = ggml_nelements(t);
    if (n == 1) return 1;
    if (n == per && t->ne[0] == per) return 2;
    throw OpError(std::string(what) + " has " + std::to_string(n) + " elements; only per-tensor or per-row/column (" + std::to_string(per) +
                  ") scales and zero points are supported");
}

ggml_tensor* int_matmul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* az, ggml_tensor* bz, ggml_tensor* as,
                        ggml_tensor* bs, ggml_tensor* ys, ggml_tensor* yz, bool a_vec, bool b_vec, double lo,
                        double hi) {
    MatmulKernelParams p{};
    p.K = a->ne[0];
    p.M = a->ne[1];
    p.a2 = a->ne[2];
    p.a3 = a->ne[3];
    int64_t kb;
    if (b_vec) {
        kb = b->ne[0];
        p.N = p.b2 = p.b3 = 1;
    } else {
        p.N = b->ne[0];
        kb = b->ne[1];
        p.b2 = b->ne[2];
        p.b3 = b->ne[3];
    }
    if (kb != p.K) throw OpError("inner dimensions differ (" + std::to_string(p.K) + " and " + std::to_string(kb) + ")");
    // Batch dims broadcast; a folded rank > 4 operand tiles (its folded leading dims are ones).
    auto bcast = [](int64_t x, int64_t y) {
        int64_t o = std::max(x, y);
        if (o % x || o % y) throw OpError("batch dims " + std::to_string(x) + " and " + std::to_string(y) + " do not broadcast");
        return o;
    };
    p.o2 = bcast(p.a2, p.b2);
    p.o3 = bcast(p.a3, p.b3);
    p.azp = per_mode(az, p.M, "a_zero_point");
    p.bzp = per_mode(bz, p.N, "b_zero_point");
    p.qlinear = as != nullptr;
    p.lo = lo;
    p.hi = hi;
    std::vector<ggml_tensor*> args = {cont(ctx, a), cont(ctx, b)};
    if (az) args.push_back(cont(ctx, az));
    if (bz) args.push_back(cont(ctx, bz));
    if (p.qlinear) {
        p.asc = per_mode(as, p.M, "a_scale");
        p.bsc = per_mode(bs, p.N, "b_scale");
        if (!ys || !yz || ggml_nelements(ys) != 1 || ggml_nelements(yz) != 1)
            throw OpError("y scale and zero point must be scalars");
        args.push_back(f32_cont(ctx, as));
        args.push_back(f32_cont(ctx, bs));
        args.push_back(f32_cont(ctx, ys));
        args.push_back(cont(ctx, yz));
    }
    // [N, M, o2, o3] with a vector operand's dim dropped.
    std::vector<int64_t> d = {p.N, p.M, p.o2, p.o3};
    if (a_vec) d.erase(d.begin() + 1);
    if (b_vec) d.erase(d.begin());
    while (d.size() < 4) d.push_back(1);
    return kcall(ctx, GGML_TYPE_I32, d.data(), args, matmul_kernel, keep_params(p));
}

// Convolution accumulator (I32 when to_int, else F32) [out..., M, N], or [out..., M] for 3-D.
ggml_tensor* int_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* xz, ggml_tensor* wz, const Ints& strides,
                      const Ints& dilations, const Ints& pads, int auto_pad, int64_t group, bool to_int) {
    int nd = int(strides.size());
    if (nd < 1 || nd > 3) throw OpError(std::to_string(nd) + " spatial dims; 1 to 3 are supported");
    if (dilations.size() != size_t(nd) || pads.size() != size_t(2 * nd))
        throw OpError("strides, dilations and pads do not match " + std::to_string(nd) + " spatial dims");
    ConvKernelParams p;
    for (int i = nd - 1; i >= 0; i--) {
        p.in_sp.push_back(x->ne[i]);
        p.k.push_back(w->ne[i]);
    }
    p.group = group;
    int64_t cg;
    if (nd == 3) {
        p.N = 1;
        p.C = x->ne[3];
        cg = group > 0 ? p.C / group : 0;
        p.M = cg > 0 ? w->ne[3] / cg : 0;
        if (cg <= 0 || p.M * cg != w->ne[3]) throw OpError("bad group/channel counts");
    } else {
        p.C = x->ne[nd];
        p.N = x->ne[nd + 1];
        cg = w->ne[nd];
        p.M = w->ne[nd + 1];
        for (int i = nd + 2; i < 4; i++)
            if (x->ne[i] != 1 || w->ne[i] != 1) throw OpError("input and weight have more dims than the convolution");
    }
    if (group <= 0 || p.C % group || p.M % group || cg != p.C / group)
        throw OpError("bad group/channel counts: C " + std::to_string(p.C) + ", M " + std::to_string(p.M) + ", group " + std::to_string(group));
    p.s = strides;
    p.d = dilations;
    for (size_t i = 0; i < strides.size(); i++)
        if (strides[i] <= 0 || dilations[i] <= 0) throw OpError("strides and dilations must be positive");
    WindowGeometry g = conv_geometry(p.in_sp, p.k, auto_pad, pads, p.s, p.d);  // the one conv/pool geometry
    p.pb = g.pad_begin;
    p.out_sp = g.out;
    p.xzp = xz != nullptr;
    p.wzp = wz != nullptr;
    p.wzp_per = false;
    if (xz && ggml_nelements(xz) != 1) throw OpError("x zero point must be a scalar");
    if (wz) {
        int64_t n = ggml_nelements(wz);
        if (n == p.M && n != 1) p.wzp_per = true;
        else if (n != 1) throw OpError("w zero point must be a scalar or per output channel");
    }
    p.to_int = to_int;
    std::vector<ggml_tensor*> args = {cont(ctx, x), cont(ctx, w)};
    if (xz) args.push_back(cont(ctx, xz));
    if (wz) args.push_back(cont(ctx, wz));
    int64_t ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < nd; i++) ne[i] = p.out_sp[size_t(nd - 1 - i)];
    ne[nd] = p.M;
    if (nd < 3) ne[nd + 1] = p.N;
    return kcall(ctx, to_int ? GGML_TYPE_I32 : GGML_TYPE_F32, ne, args, conv_kernel, keep_params(p));
}

}  // namespace

ggml_tensor* quantize_linear(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* zero_point,
                             const QuantizeParams& p) {
    if (p.qmin > p.qmax) throw OpError("qmin " + std::to_string(p.qmin) + " is above qmax " + std::to_string(p.qmax));
    return quant(ctx, x, scale, zero_point, p.axis, p.block_size, false, double(p.qmin), double(p.qmax));
}

ggml_tensor* dequantize_linear(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* zero_point,
                               const DequantizeParams& p) {
    return quant(ctx, x, scale, zero_point, p.axis, p.block_size, true, 0, 0);
}

ggml_tensor* dynamic_quantize_scale_zero_point(Ctx& ctx, ggml_tensor* x) {
    const int64_t ne[4] = {2, 1, 1, 1};
    return kcall(ctx, GGML_TYPE_F32, ne, {f32_cont(ctx, x)}, dq_stats_kernel, nullptr, 1);
}

ggml_tensor* dynamic_quantize_linear(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale_zero_point, int output) {
    if (ggml_nelements(scale_zero_point) != 2) throw OpError("scale_zero_point must have 2 elements");
    x = f32_cont(ctx, x);
    const int64_t one[4] = {1, 1, 1, 1};
    switch (output) {
        case 0: return kcall(ctx, GGML_TYPE_I32, x->ne, {x, scale_zero_point}, dq_apply_kernel, keep_params(DqApplyParams{0}));
        case 1: return ggml_view_1d(ctx, scale_zero_point, 1, 0);
        case 2: return kcall(ctx, GGML_TYPE_I32, one, {x, scale_zero_point}, dq_apply_kernel, keep_params(DqApplyParams{1}), 1);
    }
    throw OpError("output " + std::to_string(output) + " is not 0, 1 or 2");
}

ggml_tensor* matmul_integer(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* a_zero_point,
                            ggml_tensor* b_zero_point, const MatMulIntegerParams& p) {
    return int_matmul(ctx, a, b, a_zero_point, b_zero_point, nullptr, nullptr, nullptr, nullptr, p.a_vector,
                      p.b_vector, 0, 0);
}

ggml_tensor* qlinear_matmul(Ctx& ctx, ggml_tensor* a, ggml_tensor* a_scale, ggml_tensor* a_zero_point, ggml_tensor* b,
                            ggml_tensor* b_scale, ggml_tensor* b_zero_point, ggml_tensor* y_scale,
                            ggml_tensor* y_zero_point, const QLinearMatMulParams& p) {
    if (!a_scale || !b_scale) throw OpError("a_scale and b_scale are required");
    return int_matmul(ctx, a, b, a_zero_point, b_zero_point, a_scale, b_scale, y_scale, y_zero_point, p.a_vector,
                      p.b_vector, double(p.qmin), double(p.qmax));
}

ggml_tensor* conv_integer(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* x_zero_point,
                          ggml_tensor* w_zero_point, const ConvIntegerParams& p) {
    return int_conv(ctx, x, w, x_zero_point, w_zero_point, p.strides, p.dilations, p.pads, p.auto_pad, p.group, true);
}

ggml_tensor* qlinear_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* x_scale, ggml_tensor* x_zero_point, ggml_tensor* w,
                          ggml_tensor* w_scale, ggml_tensor* w_zero_point, ggml_tensor* y_scale,
                          ggml_tensor* y_zero_point, ggml_tensor* bias, const QLinearConvParams& p) {
    ggml_tensor* acc =
        int_conv(ctx, x, w, x_zero_point, w_zero_point, p.strides, p.dilations, p.pads, p.auto_pad, p.group, false);
    int nd = int(p.strides.size());
    RequantKernelParams r{};
    r.M = acc->ne[nd];
    r.inner = 1;
    for (int i = 0; i < nd; i++) r.inner *= acc->ne[i];
    int64_t nw = ggml_nelements(w_scale);
    if (nw != 1 && nw != r.M) throw OpError("w_scale must be a scalar or per output channel (" + std::to_string(r.M) + ")");
    r.per_w = nw != 1;
    if (ggml_nelements(x_scale) != 1 || ggml_nelements(y_scale) != 1 || !y_zero_point ||
        ggml_nelements(y_zero_point) != 1)
        throw OpError("x/y scales and y zero point must be scalars");
    r.bias = bias != nullptr;
    if (bias && ggml_nelements(bias) != r.M) throw OpError("bias must have one element per output channel");
    r.lo = double(p.qmin);
    r.hi = double(p.qmax);
    std::vector<ggml_tensor*> args = {acc, f32_cont(ctx, x_scale), f32_cont(ctx, w_scale), f32_cont(ctx, y_scale),
                                      cont(ctx, y_zero_point)};
    if (bias) args.push_back(cont(ctx, bias));
    return kcall(ctx, GGML_TYPE_I32, acc->ne, args, requant_kernel, keep_params(r));
}

}  // namespace o2g
