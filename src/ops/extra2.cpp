// Ops not yet moved to their family file.
//
// Most float work runs as ggml custom CPU kernels over contiguous data; the kernels read ONNX shapes from their
// parameters, so they work for any rank (rank > 4 tensors are folded by shape_to_ne, which keeps row-major order).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

bool want(const Lower& L, size_t i) { return L.node.outputs.size() > i && !L.node.outputs[i].empty(); }

struct Span { int64_t b, e; };
Span split(int64_t n, int ith, int nth) {
    int64_t per = (n + nth - 1) / std::max(nth, 1);
    int64_t b = std::min(n, per * ith);
    return {b, std::min(n, b + per)};
}

const float* fp(const ggml_tensor* t) { return static_cast<const float*>(t->data); }
const int32_t* ip(const ggml_tensor* t) { return static_cast<const int32_t*>(t->data); }
float* fp(ggml_tensor* t) { return static_cast<float*>(t->data); }
int32_t* ip(ggml_tensor* t) { return static_cast<int32_t*>(t->data); }

// Element i of a F32 or I32 tensor as double.
double at(const ggml_tensor* t, int64_t i) {
    return t->type == GGML_TYPE_I32 ? double(ip(t)[i]) : double(fp(t)[i]);
}

ggml_tensor* as_f32(Lower& L, ggml_tensor* x) {
    x = L.cont(x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    return x;
}

// A custom kernel producing ONNX shape `os`; arguments are made contiguous.
ggml_tensor* kcall(Lower& L, ggml_type type, const Shape& os, std::vector<ggml_tensor*> args, ggml_custom_op_t fn,
                   void* ud, int ntasks = GGML_N_TASKS_MAX) {
    for (auto& a : args) a = L.cont(a);
    int64_t ne[4];
    shape_to_ne(os, ne);
    if (shape_numel(os) == 0) L.error("empty output; ggml cannot hold it");
    return ggml_custom_4d(L.ctx, type, ne[0], ne[1], ne[2], ne[3], args.data(), int(args.size()), fn, ntasks, ud);
}

int64_t prod(const Shape& s, size_t b, size_t e) {
    int64_t p = 1;
    for (size_t i = b; i < e && i < s.size(); i++) p *= s[i];
    return p;
}

std::vector<int64_t> ints_or(const Node& n, const char* name, size_t len, int64_t def) {
    auto v = n.get_ints(name);
    if (v.empty()) v.assign(len, def);
    return v;
}

// ---------------------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------------------
// Quantization: y = saturate(rint(x / scale) + zp) (quantize) or (x - zp) * scale (dequantize), with the scale
// and zero point per tensor, per axis or per block along `axis`.
struct QuantP {
    bool dequant;
    int64_t A, inner, block, nscale;  // element -> (outer, a, in); scale index by mode
    bool has_zp;
    double lo, hi;
};

int64_t qindex(const QuantP& p, int64_t i) {
    if (p.nscale == 1) return 0;
    int64_t in = i % p.inner, a = (i / p.inner) % p.A, o = i / (p.inner * p.A);
    if (p.block == 0) return a;
    int64_t nb = (p.A + p.block - 1) / p.block;
    return (o * nb + a / p.block) * p.inner + in;
}

void quant_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const QuantP& p = *static_cast<const QuantP*>(ud);
    const ggml_tensor *x = dst->src[0], *sc = dst->src[1], *zp = p.has_zp ? dst->src[2] : nullptr;
    Span s = split(ggml_nelements(dst), ith, nth);
    for (int64_t i = s.b; i < s.e; i++) {
        int64_t q = qindex(p, i);
        float scale = fp(sc)[q];
        float z = zp ? float(at(zp, q)) : 0.f;
        if (p.dequant) {
            fp(dst)[i] = (float(at(x, i)) - z) * scale;
        } else {
            float v = float(at(x, i)) / scale;
            double r = std::nearbyint(double(v)) + double(z);
            ip(dst)[i] = int32_t(std::clamp(r, p.lo, p.hi));
        }
    }
}

bool int_range(DType t, double& lo, double& hi) {
    switch (t) {
        case DType::UINT8: lo = 0; hi = 255; return true;
        case DType::INT8: lo = -128; hi = 127; return true;
        case DType::UINT16: lo = 0; hi = 65535; return true;
        case DType::INT16: lo = -32768; hi = 32767; return true;
        case DType::INT32: lo = -2147483648.0; hi = 2147483647.0; return true;
        default: return false;
    }
}

// Builds the parameters for input 0 (x) with scale input 1 and zero point input 2.
QuantP quant_params(Lower& L, bool dequant) {
    const Shape& xs = L.shape(0);
    const Shape& ss = L.shape(1);
    int r = int(xs.size());
    QuantP p{dequant, 1, 1, 0, 1, L.has(2), 0, 0};
    int64_t ns = shape_numel(ss);
    int64_t block = L.node.get_int("block_size", 0);
    if (L.has(2) && L.shape(2) != ss) L.error("zero point and scale shapes differ");
    if (ns == 1 && block == 0) return p;
    int axis = norm_axis(L, L.node.get_int("axis", 1), r);
    p.A = xs[size_t(axis)];
    p.inner = prod(xs, size_t(axis) + 1, xs.size());
    p.nscale = ns;
    if (block > 0) {
        if (int(ss.size()) != r) L.error("blocked quantization needs scale of the input's rank");
        for (int i = 0; i < r; i++)
            if (i != axis ? ss[size_t(i)] != xs[size_t(i)] : ss[size_t(i)] != (p.A + block - 1) / block)
                L.error("scale shape " + shape_str(ss) + " does not match blocks of " + std::to_string(block));
        p.block = block;
    } else {
        if (ss.size() != 1 || ss[0] != p.A) L.error("per-axis scale must be 1-D with the axis' size");
    }
    return p;
}

void lower_quant_common(Lower& L, bool dequant) {
    QuantP p = quant_params(L, dequant);
    const Shape& xs = L.shape(0);
    ggml_tensor* x = L.cont(L.b.tensor(L.in(0)));
    ggml_tensor* sc = as_f32(L, L.t(1));
    std::vector<ggml_tensor*> args = {x, sc};
    if (p.has_zp) args.push_back(L.cont(L.b.tensor(L.in(2))));
    DType out_t;
    if (dequant) {
        if (!dtype_is_integer(L.dtype(0))) L.error(std::string("input type ") + dtype_name(L.dtype(0)) + " is not supported");
        int64_t od = L.node.get_int("output_dtype", 0);
        out_t = od ? DType(od) : L.dtype(1);
        if (!dtype_is_float(out_t)) L.error("output_dtype must be a float type");
    } else {
        int64_t od = L.node.get_int("output_dtype", 0);
        out_t = p.has_zp ? L.dtype(2) : od ? DType(od) : DType::UINT8;
        if (od && p.has_zp && DType(od) != L.dtype(2)) L.error("output_dtype does not match the zero point type");
        if (!int_range(out_t, p.lo, p.hi) || out_t == DType::INT32)
            L.error(std::string("quantizing to ") + dtype_name(out_t) + " is not supported");
        if (L.node.has("precision") && L.node.get_int("precision", 0) != 0 &&
            DType(L.node.get_int("precision", 0)) != DType::FLOAT)
            L.error("precision other than float is not supported");
    }
    ggml_tensor* y = kcall(L, dequant ? GGML_TYPE_F32 : GGML_TYPE_I32, xs, args, quant_kernel, keep_params(p));
    L.out_shape(0, y, out_t, xs);
}

// DynamicQuantizeLinear: stats kernel -> [scale, zero point]; then quantize.
void dq_stats_kernel(ggml_tensor* dst, int ith, int, void*) {
    if (ith != 0) return;
    const ggml_tensor* x = dst->src[0];
    int64_t n = ggml_nelements(x);
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) {
        mn = std::min(mn, fp(x)[i]);
        mx = std::max(mx, fp(x)[i]);
    }
    float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    float zp = float(std::nearbyint(std::clamp(double(0.0f - mn / scale), 0.0, 255.0)));
    fp(dst)[0] = scale;
    fp(dst)[1] = zp;
}
struct DqP { int part; };  // 0: y, 1: zero point
void dq_apply_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    int part = static_cast<const DqP*>(ud)->part;
    const ggml_tensor *x = dst->src[0], *st = dst->src[1];
    float scale = fp(st)[0], zp = fp(st)[1];
    if (part == 1) {
        if (ith == 0) ip(dst)[0] = int32_t(zp);
        return;
    }
    Span s = split(ggml_nelements(dst), ith, nth);
    for (int64_t i = s.b; i < s.e; i++) {
        double v = std::nearbyint(double(fp(x)[i] / scale)) + zp;
        ip(dst)[i] = int32_t(std::clamp(v, 0.0, 255.0));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Integer matmul (numpy broadcasting), exact in double; optional requantization (QLinearMatMul).
struct MatP {
    Shape as, bs, os;  // after 1-D promotion
    int64_t M, K, N;
    int azp, bzp;      // 0 none, 1 per tensor, 2 per row (a) / per column (b)
    bool qlinear;
    int asc, bsc;      // scale modes like zero points
    double lo, hi;
};
void matmul_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const MatP& p = *static_cast<const MatP*>(ud);
    int nsrc = 0;
    const ggml_tensor* A = dst->src[nsrc++];
    const ggml_tensor* B = dst->src[nsrc++];
    const ggml_tensor* AZ = p.azp ? dst->src[nsrc++] : nullptr;
    const ggml_tensor* BZ = p.bzp ? dst->src[nsrc++] : nullptr;
    const ggml_tensor *AS = nullptr, *BS = nullptr, *YS = nullptr, *YZ = nullptr;
    if (p.qlinear) {
        AS = dst->src[nsrc++];
        BS = dst->src[nsrc++];
        YS = dst->src[nsrc++];
        YZ = dst->src[nsrc++];
    }
    size_t r = p.os.size();
    int64_t batch = prod(p.os, 0, r - 2);
    Span s = split(batch * p.M, ith, nth);
    std::vector<int64_t> idx(r);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t bt = e / p.M, i = e % p.M;
        // batch offsets with broadcasting
        int64_t rem = bt, aoff = 0, boff = 0, astr = 1, bstr = 1;
        for (int64_t d = int64_t(r) - 3; d >= 0; d--) {
            int64_t od = p.os[size_t(d)], c = rem % od;
            rem /= od;
            int64_t ad = p.as[size_t(d)], bd = p.bs[size_t(d)];
            aoff += (ad == 1 ? 0 : c) * astr;
            boff += (bd == 1 ? 0 : c) * bstr;
            astr *= ad;
            bstr *= bd;
        }
        aoff *= p.M * p.K;
        boff *= p.K * p.N;
        double az = p.azp == 1 ? at(AZ, 0) : p.azp == 2 ? at(AZ, i) : 0.0;
        for (int64_t j = 0; j < p.N; j++) {
            double bz = p.bzp == 1 ? at(BZ, 0) : p.bzp == 2 ? at(BZ, j) : 0.0;
            double acc = 0;
            for (int64_t kk = 0; kk < p.K; kk++)
                acc += (at(A, aoff + i * p.K + kk) - az) * (at(B, boff + kk * p.N + j) - bz);
            int64_t o = e * p.N + j;
            if (!p.qlinear) {
                ip(dst)[o] = int32_t(acc);
                continue;
            }
            float as = fp(AS)[p.asc == 2 ? i : 0], bs = fp(BS)[p.bsc == 2 ? j : 0], ys = fp(YS)[0];
            float f = float(acc) * (as * bs / ys);
            double v = std::nearbyint(double(f + float(at(YZ, 0))));
            ip(dst)[o] = int32_t(std::clamp(v, p.lo, p.hi));
        }
    }
}

// inputs: a, b; zero points / scales by index (-1 when absent).
void lower_int_matmul(Lower& L, int ia, int ib, int iaz, int ibz, int ias, int ibs, int iys, int iyz) {
    Shape as = L.shape(ia), bs = L.shape(ib);
    bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) as.insert(as.begin(), 1);
    if (b1) bs.push_back(1);
    if (as.size() < 2 || bs.size() < 2) L.error("operands must have rank >= 1");
    if (as.back() != bs[bs.size() - 2]) L.error("inner dimensions differ");
    size_t r = std::max(as.size(), bs.size());
    while (as.size() < r) as.insert(as.begin(), 1);
    while (bs.size() < r) bs.insert(bs.begin(), 1);
    MatP p;
    p.as = as;
    p.bs = bs;
    p.M = as[r - 2];
    p.K = as[r - 1];
    p.N = bs[r - 1];
    Shape batch = broadcast_shapes(L, Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
    p.os = batch;
    p.os.push_back(p.M);
    p.os.push_back(p.N);
    auto mode = [&](int i, int64_t per) {
        if (i < 0 || !L.has(i)) return 0;
        int64_t n = shape_numel(L.shape(i));
        if (n == 1) return 1;
        if (n == per && L.rank(i) == 1) return 2;
        L.error("only per-tensor or per-row/column scales and zero points are supported");
    };
    p.azp = mode(iaz, p.M);
    p.bzp = mode(ibz, p.N);
    p.qlinear = ias >= 0;
    p.asc = p.bsc = 0;
    p.lo = p.hi = 0;
    std::vector<ggml_tensor*> args = {L.cont(L.b.tensor(L.in(ia))), L.cont(L.b.tensor(L.in(ib)))};
    if (p.azp) args.push_back(L.cont(L.b.tensor(L.in(iaz))));
    if (p.bzp) args.push_back(L.cont(L.b.tensor(L.in(ibz))));
    DType out_t = DType::INT32;
    if (p.qlinear) {
        p.asc = mode(ias, p.M);
        p.bsc = mode(ibs, p.N);
        if (mode(iys, 1) != 1 || !L.has(iyz) || mode(iyz, 1) != 1) L.error("y scale and zero point must be scalars");
        out_t = L.dtype(iyz);
        if (!int_range(out_t, p.lo, p.hi)) L.error("unsupported output type");
        args.push_back(as_f32(L, L.t(ias)));
        args.push_back(as_f32(L, L.t(ibs)));
        args.push_back(as_f32(L, L.t(iys)));
        args.push_back(L.cont(L.b.tensor(L.in(iyz))));
    }
    Shape os = p.os;
    ggml_tensor* y = kcall(L, GGML_TYPE_I32, os, args, matmul_kernel, keep_params(p));
    if (a1) os.erase(os.end() - 2);
    if (b1) os.pop_back();
    L.out_shape(0, y, out_t, os);
}

// ---------------------------------------------------------------------------------------------------------
// N-D convolution / pooling geometry.
struct Geo {
    Shape in_sp, k, s, d, pb, out_sp;
};

Geo pool_geometry(Lower& L, const Shape& in_sp, std::vector<int64_t> k, bool allow_ceil) {
    size_t n = in_sp.size();
    Geo g;
    g.in_sp = in_sp;
    g.k = k;
    g.s = ints_or(L.node, "strides", n, 1);
    g.d = ints_or(L.node, "dilations", n, 1);
    if (g.k.size() != n || g.s.size() != n || g.d.size() != n) L.error("kernel_shape/strides/dilations have wrong length");
    std::string ap = L.node.get_string("auto_pad", "NOTSET");
    bool ceil_mode = allow_ceil && L.node.get_int("ceil_mode", 0) != 0;
    g.pb.assign(n, 0);
    g.out_sp.assign(n, 0);
    auto pads = L.node.get_ints("pads");
    if (ap == "NOTSET" && !pads.empty() && pads.size() != 2 * n) L.error("pads has wrong length");
    for (size_t i = 0; i < n; i++) {
        int64_t ek = (k[i] - 1) * g.d[i] + 1;
        if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
            int64_t o = (in_sp[i] + g.s[i] - 1) / g.s[i];
            int64_t total = std::max<int64_t>(0, (o - 1) * g.s[i] + ek - in_sp[i]);
            g.pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
            g.out_sp[i] = o;
        } else if (ap == "VALID") {
            g.out_sp[i] = (in_sp[i] - ek) / g.s[i] + 1;
        } else if (ap == "NOTSET") {
            int64_t b = pads.empty() ? 0 : pads[i], e = pads.empty() ? 0 : pads[i + n];
            g.pb[i] = b;
            int64_t span = in_sp[i] + b + e - ek;
            int64_t o = (ceil_mode ? (span + g.s[i] - 1) / g.s[i] : span / g.s[i]) + 1;
            if (ceil_mode && (o - 1) * g.s[i] >= in_sp[i] + b) o--;
            g.out_sp[i] = o;
        } else L.error("unknown auto_pad '" + ap + "'");
        if (g.out_sp[i] <= 0) L.error("output size is not positive");
    }
    return g;
}

// Convolution: x [N, C, sp...], w [M, C/g, k...] -> [N, M, out...], accumulation in double.
struct ConvP {
    Geo g;
    int64_t N, C, M, group;
    bool xzp, wzp_per;  // has x zero point; w zero point per output channel
    bool wzp;
    bool to_int;        // write I32 (ConvInteger)
};
void conv_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const ConvP& p = *static_cast<const ConvP*>(ud);
    int ns = 0;
    const ggml_tensor* X = dst->src[ns++];
    const ggml_tensor* W = dst->src[ns++];
    const ggml_tensor* XZ = p.xzp ? dst->src[ns++] : nullptr;
    const ggml_tensor* WZ = p.wzp ? dst->src[ns++] : nullptr;
    size_t nd = p.g.in_sp.size();
    int64_t in_n = shape_numel(p.g.in_sp), out_n = shape_numel(p.g.out_sp), k_n = shape_numel(p.g.k);
    int64_t cg = p.C / p.group, mg = p.M / p.group;
    double xz = XZ ? at(XZ, 0) : 0.0;
    Span s = split(p.N * p.M * out_n, ith, nth);
    std::vector<int64_t> oc(nd), kc(nd);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t o = e % out_n, m = (e / out_n) % p.M, n = e / (out_n * p.M);
        int64_t grp = m / mg;
        double wz = WZ ? at(WZ, p.wzp_per ? m : 0) : 0.0;
        int64_t rem = o;
        for (size_t i = nd; i-- > 0;) {
            oc[i] = rem % p.g.out_sp[i];
            rem /= p.g.out_sp[i];
        }
        double acc = 0;
        for (int64_t kk = 0; kk < k_n; kk++) {
            int64_t r2 = kk, off = 0;
            bool inside = true;
            for (size_t i = nd; i-- > 0;) {
                kc[i] = r2 % p.g.k[i];
                r2 /= p.g.k[i];
            }
            int64_t mul = 1;
            for (size_t i = nd; i-- > 0;) {
                int64_t pos = oc[i] * p.g.s[i] - p.g.pb[i] + kc[i] * p.g.d[i];
                if (pos < 0 || pos >= p.g.in_sp[i]) {
                    inside = false;
                    break;
                }
                off += pos * mul;
                mul *= p.g.in_sp[i];
            }
            if (!inside) continue;
            for (int64_t c = 0; c < cg; c++) {
                double xv = at(X, (n * p.C + grp * cg + c) * in_n + off) - xz;
                double wv = at(W, (m * cg + c) * k_n + kk) - wz;
                acc += xv * wv;
            }
        }
        if (p.to_int) ip(dst)[e] = int32_t(acc);
        else fp(dst)[e] = float(acc);
    }
}

// Builds the conv kernel for inputs x (0), w (iw), zero points ixz / iwz (-1 if none).
ggml_tensor* conv_int(Lower& L, int ix, int iw, int ixz, int iwz, bool to_int, Shape& os) {
    const Shape& xs = L.shape(ix);
    const Shape& ws = L.shape(iw);
    if (xs.size() < 3 || ws.size() != xs.size()) L.error("input and weight must have the same rank >= 3");
    ConvP p;
    Shape in_sp(xs.begin() + 2, xs.end());
    auto k = L.node.get_ints("kernel_shape");
    if (k.empty()) k.assign(ws.begin() + 2, ws.end());
    p.g = pool_geometry(L, in_sp, k, false);
    p.N = xs[0];
    p.C = xs[1];
    p.M = ws[0];
    p.group = L.node.get_int("group", 1);
    if (p.group <= 0 || p.C % p.group || p.M % p.group || ws[1] != p.C / p.group) L.error("bad group/channel counts");
    p.xzp = ixz >= 0 && L.has(ixz);
    p.wzp = iwz >= 0 && L.has(iwz);
    p.wzp_per = false;
    if (p.xzp && shape_numel(L.shape(ixz)) != 1) L.error("x zero point must be a scalar");
    if (p.wzp) {
        int64_t n = shape_numel(L.shape(iwz));
        if (n == p.M && n != 1) p.wzp_per = true;
        else if (n != 1) L.error("w zero point must be a scalar or per output channel");
    }
    p.to_int = to_int;
    std::vector<ggml_tensor*> args = {L.cont(L.b.tensor(L.in(ix))), L.cont(L.b.tensor(L.in(iw)))};
    if (p.xzp) args.push_back(L.cont(L.b.tensor(L.in(ixz))));
    if (p.wzp) args.push_back(L.cont(L.b.tensor(L.in(iwz))));
    os = {p.N, p.M};
    os.insert(os.end(), p.g.out_sp.begin(), p.g.out_sp.end());
    return kcall(L, to_int ? GGML_TYPE_I32 : GGML_TYPE_F32, os, args, conv_kernel, keep_params(p));
}

// QLinearConv requantization: y = sat(rint(acc' * (xs * ws[m] / ys)) + yz), acc' = acc + bias[m].
struct RequantP { int64_t M, inner; bool per_w, bias; double lo, hi; };
void requant_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RequantP& p = *static_cast<const RequantP*>(ud);
    const ggml_tensor *acc = dst->src[0], *XS = dst->src[1], *WS = dst->src[2], *YS = dst->src[3], *YZ = dst->src[4];
    const ggml_tensor* B = p.bias ? dst->src[5] : nullptr;
    Span s = split(ggml_nelements(dst), ith, nth);
    for (int64_t i = s.b; i < s.e; i++) {
        int64_t m = (i / p.inner) % p.M;
        double a = double(fp(acc)[i]) + (B ? at(B, m) : 0.0);
        float sc = fp(XS)[0] * fp(WS)[p.per_w ? m : 0] / fp(YS)[0];
        float f = float(a) * sc + float(at(YZ, 0));
        ip(dst)[i] = int32_t(std::clamp(std::nearbyint(double(f)), p.lo, p.hi));
    }
}

// ---------------------------------------------------------------------------------------------------------
// DFT along one axis of [outer, A, inner, c] (c = 1 real or 2 complex) -> [outer, L_out, inner, c_out].
struct DftP {
    int64_t outer, A, inner, cin, n, out_len, cout;
    bool inverse, onesided;
};
void dft_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const DftP& p = *static_cast<const DftP*>(ud);
    const float* x = fp(dst->src[0]);
    float* y = fp(dst);
    Span s = split(p.outer * p.inner, ith, nth);
    const double two_pi = 2.0 * M_PI;
    std::vector<double> re(size_t(p.n)), im(size_t(p.n));
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t o = e / p.inner, in = e % p.inner;
        auto xin = [&](int64_t a, int comp) -> double {
            if (a >= p.A) return 0.0;
            if (comp >= p.cin) return 0.0;
            return x[((o * p.A + a) * p.inner + in) * p.cin + comp];
        };
        if (p.inverse && p.onesided) {  // irfft: Hermitian extension of the first n/2+1 bins
            int64_t nb = p.n / 2 + 1;
            for (int64_t k = 0; k < p.n; k++) {
                if (k < nb) {
                    re[size_t(k)] = xin(k, 0);
                    im[size_t(k)] = xin(k, 1);
                } else {
                    re[size_t(k)] = xin(p.n - k, 0);
                    im[size_t(k)] = -xin(p.n - k, 1);
                }
            }
            im[0] = 0;
            if (p.n % 2 == 0) im[size_t(p.n / 2)] = 0;
        } else {
            for (int64_t k = 0; k < p.n; k++) {
                re[size_t(k)] = xin(k, 0);
                im[size_t(k)] = xin(k, 1);
            }
        }
        double sign = p.inverse ? 1.0 : -1.0;
        for (int64_t k = 0; k < p.out_len; k++) {
            double sr = 0, si = 0;
            for (int64_t t = 0; t < p.n; t++) {
                double ang = sign * two_pi * double((k * t) % p.n) / double(p.n);
                double c = std::cos(ang), sn = std::sin(ang);
                sr += re[size_t(t)] * c - im[size_t(t)] * sn;
                si += re[size_t(t)] * sn + im[size_t(t)] * c;
            }
            if (p.inverse) {
                sr /= double(p.n);
                si /= double(p.n);
            }
            float* d = y + ((o * p.out_len + k) * p.inner + in) * p.cout;
            d[0] = float(sr);
            if (p.cout == 2) d[1] = float(si);
        }
    }
}

struct StftP { int64_t B, Lsig, cin, frames, step, flen, bins; bool has_win; };
void stft_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const StftP& p = *static_cast<const StftP*>(ud);
    const float* x = fp(dst->src[0]);
    const float* w = p.has_win ? fp(dst->src[1]) : nullptr;
    float* y = fp(dst);
    Span s = split(p.B * p.frames, ith, nth);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t b = e / p.frames, f = e % p.frames;
        for (int64_t k = 0; k < p.bins; k++) {
            double sr = 0, si = 0;
            for (int64_t t = 0; t < p.flen; t++) {
                int64_t pos = f * p.step + t;
                if (pos >= p.Lsig) break;
                double wt = w ? double(w[t]) : 1.0;
                double xr = x[(b * p.Lsig + pos) * p.cin] * wt;
                double xi = p.cin == 2 ? x[(b * p.Lsig + pos) * p.cin + 1] * wt : 0.0;
                double ang = -2.0 * M_PI * double((k * t) % p.flen) / double(p.flen);
                double c = std::cos(ang), sn = std::sin(ang);
                sr += xr * c - xi * sn;
                si += xr * sn + xi * c;
            }
            float* d = y + ((b * p.frames + f) * p.bins + k) * 2;
            d[0] = float(sr);
            d[1] = float(si);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
}  // namespace

// ============================================ lowerings ====================================================

// ---- QuantizeLinear / DequantizeLinear ----
void lower_QuantizeLinear(Lower& L) {
    if (!dtype_is_float(L.dtype(0))) L.error("input must be float");
    lower_quant_common(L, false);
}
void lower_DequantizeLinear(Lower& L) { lower_quant_common(L, true); }

void lower_DynamicQuantizeLinear(Lower& L) {
    const Shape& xs = L.shape(0);
    ggml_tensor* x = as_f32(L, L.t(0));
    ggml_tensor* st = kcall(L, GGML_TYPE_F32, {2}, {x}, dq_stats_kernel, nullptr, 1);
    ggml_tensor* y = kcall(L, GGML_TYPE_I32, xs, {x, st}, dq_apply_kernel, keep_params(DqP{0}));
    L.out_shape(0, y, DType::UINT8, xs);
    if (want(L, 1)) L.out_shape(1, ggml_view_1d(L.ctx, st, 1, 0), L.dtype(0), {});
    if (want(L, 2)) L.out_shape(2, kcall(L, GGML_TYPE_I32, {1}, {x, st}, dq_apply_kernel, keep_params(DqP{1}), 1), DType::UINT8, {});
}

void lower_MatMulInteger(Lower& L) { lower_int_matmul(L, 0, 1, 2, 3, -1, -1, -1, -1); }
void lower_QLinearMatMul(Lower& L) { lower_int_matmul(L, 0, 3, 2, 5, 1, 4, 6, 7); }

void lower_ConvInteger(Lower& L) {
    Shape os;
    ggml_tensor* y = conv_int(L, 0, 1, 2, 3, true, os);
    L.out_shape(0, y, DType::INT32, os);
}

void lower_QLinearConv(Lower& L) {
    Shape os;
    ggml_tensor* acc = conv_int(L, 0, 3, 2, 5, false, os);
    RequantP p;
    p.M = os[1];
    p.inner = prod(os, 2, os.size());
    int64_t nw = shape_numel(L.shape(4));
    if (nw != 1 && nw != p.M) L.error("w_scale must be a scalar or per output channel");
    p.per_w = nw != 1;
    if (shape_numel(L.shape(1)) != 1 || shape_numel(L.shape(6)) != 1 || !L.has(7) || shape_numel(L.shape(7)) != 1)
        L.error("x/y scales and y zero point must be scalars");
    p.bias = L.has(8);
    DType out_t = L.dtype(7);
    if (!int_range(out_t, p.lo, p.hi)) L.error("unsupported output type");
    std::vector<ggml_tensor*> args = {acc, as_f32(L, L.t(1)), as_f32(L, L.t(4)), as_f32(L, L.t(6)),
                                      L.cont(L.b.tensor(L.in(7)))};
    if (p.bias) args.push_back(L.cont(L.b.tensor(L.in(8))));
    ggml_tensor* y = kcall(L, GGML_TYPE_I32, os, args, requant_kernel, keep_params(p));
    L.out_shape(0, y, out_t, os);
}

// ---- DFT (17, 20) ----
void lower_DFT(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 2 || (xs.back() != 1 && xs.back() != 2)) L.error("input must end in a dimension of 1 or 2");
    int64_t axis;
    if (L.opset >= 20) {
        axis = -2;
        if (L.has(2)) {
            auto a = L.ints(2);
            if (a.size() != 1) L.error("axis must be a scalar");
            axis = a[0];
        }
    } else axis = L.node.get_int("axis", 1);
    int ax = norm_axis(L, axis, r);
    if (ax == r - 1) L.error("axis cannot be the last (complex) dimension");
    DftP p;
    p.inverse = L.node.get_int("inverse", 0) != 0;
    p.onesided = L.node.get_int("onesided", 0) != 0;
    p.outer = prod(xs, 0, size_t(ax));
    p.A = xs[size_t(ax)];
    p.inner = prod(xs, size_t(ax) + 1, xs.size() - 1);
    p.cin = xs.back();
    if (L.has(1)) {
        auto n = L.ints(1);
        if (n.size() != 1 || n[0] <= 0) L.error("dft_length must be a positive scalar");
        p.n = n[0];
    } else p.n = p.inverse && p.onesided ? 2 * (p.A - 1) : p.A;
    if (p.n <= 0) L.error("dft length must be positive");
    if (p.inverse && p.onesided) {
        p.out_len = p.n;
        p.cout = 1;
    } else {
        p.out_len = p.onesided ? p.n / 2 + 1 : p.n;
        p.cout = 2;
    }
    Shape os = xs;
    os[size_t(ax)] = p.out_len;
    os.back() = p.cout;
    ggml_tensor* y = kcall(L, GGML_TYPE_F32, os, {as_f32(L, L.t(0))}, dft_kernel, keep_params(p));
    L.out_shape(0, y, L.dtype(0), os);
}

// ---- STFT (17) ----
void lower_STFT(Lower& L) {
    const Shape& xs = L.shape(0);
    if (xs.size() != 3 || (xs[2] != 1 && xs[2] != 2)) L.error("signal must be [batch, length, 1 or 2]");
    auto step = L.ints(1);
    if (step.size() != 1 || step[0] <= 0) L.error("frame_step must be a positive scalar");
    StftP p;
    p.B = xs[0];
    p.Lsig = xs[1];
    p.cin = xs[2];
    p.step = step[0];
    p.has_win = L.has(2);
    if (L.has(3)) {
        auto fl = L.ints(3);
        if (fl.size() != 1 || fl[0] <= 0) L.error("frame_length must be a positive scalar");
        p.flen = fl[0];
    } else if (p.has_win) p.flen = L.shape(2)[0];
    else p.flen = p.Lsig;
    if (p.has_win && (L.rank(2) != 1 || L.shape(2)[0] != p.flen)) L.error("window must have frame_length elements");
    if (p.flen > p.Lsig) L.error("frame_length exceeds the signal length");
    bool onesided = L.node.get_int("onesided", 1) != 0;
    if (onesided && p.cin == 2) L.error("onesided output needs a real signal");
    p.frames = 1 + (p.Lsig - p.flen) / p.step;
    p.bins = onesided ? p.flen / 2 + 1 : p.flen;
    Shape os = {p.B, p.frames, p.bins, 2};
    std::vector<ggml_tensor*> args = {as_f32(L, L.t(0))};
    if (p.has_win) args.push_back(as_f32(L, L.t(2)));
    ggml_tensor* y = kcall(L, GGML_TYPE_F32, os, args, stft_kernel, keep_params(p));
    L.out_shape(0, y, L.dtype(0), os);
}

}  // namespace onnx2ggml
