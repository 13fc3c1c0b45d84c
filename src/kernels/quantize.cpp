// CPU kernels of the quantization ops (see kernels/quantize.h).
#include "lib/row_gather.h"  // prod
#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/custom.h"

namespace o2g {

namespace {


const float* f32_data(const ggml_tensor* t) { return static_cast<const float*>(t->data); }
const int32_t* i32_data(const ggml_tensor* t) { return static_cast<const int32_t*>(t->data); }
float* f32_data(ggml_tensor* t) { return static_cast<float*>(t->data); }
int32_t* i32_data(ggml_tensor* t) { return static_cast<int32_t*>(t->data); }

// Element i of a F32 or I32 tensor as double.
double at(const ggml_tensor* t, int64_t i) {
    return t->type == GGML_TYPE_I32 ? double(i32_data(t)[i]) : double(f32_data(t)[i]);
}

int64_t qindex(const QuantKernelParams& p, int64_t i) {
    if (p.nscale == 1) return 0;
    int64_t in = i % p.inner, a = (i / p.inner) % p.A, o = i / (p.inner * p.A);
    if (p.block == 0) return a;
    int64_t nb = (p.A + p.block - 1) / p.block;
    return (o * nb + a / p.block) * p.inner + in;
}

}  // namespace

void quant_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const QuantKernelParams& p = *static_cast<const QuantKernelParams*>(ud);
    const ggml_tensor *x = dst->src[0], *sc = dst->src[1], *zp = p.has_zp ? dst->src[2] : nullptr;
    WorkSpan s = work_span(ggml_nelements(dst), ith, nth);
    for (int64_t i = s.b; i < s.e; i++) {
        int64_t q = qindex(p, i);
        float scale = f32_data(sc)[q];
        float z = zp ? float(at(zp, q)) : 0.f;
        if (p.dequant) {
            f32_data(dst)[i] = (float(at(x, i)) - z) * scale;
        } else {
            float v = float(at(x, i)) / scale;
            double r = std::nearbyint(double(v)) + double(z);
            i32_data(dst)[i] = int32_t(std::clamp(r, p.lo, p.hi));
        }
    }
}

void dq_stats_kernel(ggml_tensor* dst, int ith, int, void*) {
    if (ith != 0) return;
    const ggml_tensor* x = dst->src[0];
    int64_t n = ggml_nelements(x);
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) {
        mn = std::min(mn, f32_data(x)[i]);
        mx = std::max(mx, f32_data(x)[i]);
    }
    float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    float zp = float(std::nearbyint(std::clamp(double(0.0f - mn / scale), 0.0, 255.0)));
    f32_data(dst)[0] = scale;
    f32_data(dst)[1] = zp;
}

void dq_apply_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    int part = static_cast<const DqApplyParams*>(ud)->part;
    const ggml_tensor *x = dst->src[0], *st = dst->src[1];
    float scale = f32_data(st)[0], zp = f32_data(st)[1];
    if (part == 1) {
        if (ith == 0) i32_data(dst)[0] = int32_t(zp);
        return;
    }
    WorkSpan s = work_span(ggml_nelements(dst), ith, nth);
    for (int64_t i = s.b; i < s.e; i++) {
        double v = std::nearbyint(double(f32_data(x)[i] / scale)) + zp;
        i32_data(dst)[i] = int32_t(std::clamp(v, 0.0, 255.0));
    }
}

// An integer product's int32 sum wraps, as onnxruntime's does (found by tests/fuzz: UB as a cast).
static int32_t wrap_int32(double acc) {
    return int32_t(uint32_t(uint64_t(int64_t(std::clamp(acc, -9.0e18, 9.0e18)))));
}

void matmul_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const MatmulKernelParams& p = *static_cast<const MatmulKernelParams*>(ud);
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
    WorkSpan s = work_span(p.o2 * p.o3 * p.M, ith, nth);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t bt = e / p.M, i = e % p.M;
        // Output batch coordinates; operand dims tile (size 1 broadcasts, and so do folded leading ones).
        int64_t c2 = bt % p.o2, c3 = bt / p.o2;
        int64_t aoff = ((c3 % p.a3) * p.a2 + c2 % p.a2) * p.M * p.K;
        int64_t boff = ((c3 % p.b3) * p.b2 + c2 % p.b2) * p.K * p.N;
        double az = p.azp == 1 ? at(AZ, 0) : p.azp == 2 ? at(AZ, i) : 0.0;
        for (int64_t j = 0; j < p.N; j++) {
            double bz = p.bzp == 1 ? at(BZ, 0) : p.bzp == 2 ? at(BZ, j) : 0.0;
            double acc = 0;
            for (int64_t kk = 0; kk < p.K; kk++)
                acc += (at(A, aoff + i * p.K + kk) - az) * (at(B, boff + kk * p.N + j) - bz);
            int64_t o = e * p.N + j;
            if (!p.qlinear) {
                i32_data(dst)[o] = wrap_int32(acc);
                continue;
            }
            float as = f32_data(AS)[p.asc == 2 ? i : 0], bs = f32_data(BS)[p.bsc == 2 ? j : 0], ys = f32_data(YS)[0];
            float f = float(acc) * (as * bs / ys);
            double v = std::nearbyint(double(f + float(at(YZ, 0))));
            i32_data(dst)[o] = int32_t(std::clamp(v, p.lo, p.hi));
        }
    }
}

void conv_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const ConvKernelParams& p = *static_cast<const ConvKernelParams*>(ud);
    int ns = 0;
    const ggml_tensor* X = dst->src[ns++];
    const ggml_tensor* W = dst->src[ns++];
    const ggml_tensor* XZ = p.xzp ? dst->src[ns++] : nullptr;
    const ggml_tensor* WZ = p.wzp ? dst->src[ns++] : nullptr;
    size_t nd = p.in_sp.size();
    int64_t in_n = prod(p.in_sp), out_n = prod(p.out_sp), k_n = prod(p.k);
    int64_t cg = p.C / p.group, mg = p.M / p.group;
    double xz = XZ ? at(XZ, 0) : 0.0;
    WorkSpan s = work_span(p.N * p.M * out_n, ith, nth);
    std::vector<int64_t> oc(nd), kc(nd);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t o = e % out_n, m = (e / out_n) % p.M, n = e / (out_n * p.M);
        int64_t grp = m / mg;
        double wz = WZ ? at(WZ, p.wzp_per ? m : 0) : 0.0;
        int64_t rem = o;
        for (size_t i = nd; i-- > 0;) {
            oc[i] = rem % p.out_sp[i];
            rem /= p.out_sp[i];
        }
        double acc = 0;
        for (int64_t kk = 0; kk < k_n; kk++) {
            int64_t r2 = kk, off = 0;
            bool inside = true;
            for (size_t i = nd; i-- > 0;) {
                kc[i] = r2 % p.k[i];
                r2 /= p.k[i];
            }
            int64_t mul = 1;
            for (size_t i = nd; i-- > 0;) {
                int64_t pos = oc[i] * p.s[i] - p.pb[i] + kc[i] * p.d[i];
                if (pos < 0 || pos >= p.in_sp[i]) {
                    inside = false;
                    break;
                }
                off += pos * mul;
                mul *= p.in_sp[i];
            }
            if (!inside) continue;
            for (int64_t c = 0; c < cg; c++) {
                double xv = at(X, (n * p.C + grp * cg + c) * in_n + off) - xz;
                double wv = at(W, (m * cg + c) * k_n + kk) - wz;
                acc += xv * wv;
            }
        }
        if (p.to_int) i32_data(dst)[e] = wrap_int32(acc);
        else f32_data(dst)[e] = float(acc);
    }
}

void requant_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RequantKernelParams& p = *static_cast<const RequantKernelParams*>(ud);
    const ggml_tensor *acc = dst->src[0], *XS = dst->src[1], *WS = dst->src[2], *YS = dst->src[3], *YZ = dst->src[4];
    const ggml_tensor* B = p.bias ? dst->src[5] : nullptr;
    WorkSpan s = work_span(ggml_nelements(dst), ith, nth);
    for (int64_t i = s.b; i < s.e; i++) {
        int64_t m = (i / p.inner) % p.M;
        double a = double(f32_data(acc)[i]) + (B ? at(B, m) : 0.0);
        float sc = f32_data(XS)[0] * f32_data(WS)[p.per_w ? m : 0] / f32_data(YS)[0];
        float f = float(a) * sc + float(at(YZ, 0));
        i32_data(dst)[i] = int32_t(std::clamp(std::nearbyint(double(f)), p.lo, p.hi));
    }
}

}  // namespace o2g
