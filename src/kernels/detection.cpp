// CPU kernel of RoiAlign (see kernels/detection.h).
#include "kernels/detection.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace o2g {

namespace {

struct Sample { int64_t p[4]; float w[4]; };

// Sampling points and bilinear weights of one RoI, in float like the reference implementations (the grid size
// for sampling_ratio = 0 depends on the exact float RoI size).
void roi_samples(const RoiAlignKernelParams& p, const float* roi, int64_t H, int64_t W, std::vector<Sample>& out,
                 int64_t& gh, int64_t& gw) {
    float off = p.half_pixel ? 0.5f : 0.0f;
    float x0 = roi[0] * p.spatial_scale - off, y0 = roi[1] * p.spatial_scale - off;
    float x1 = roi[2] * p.spatial_scale - off, y1 = roi[3] * p.spatial_scale - off;
    float rw = x1 - x0, rh = y1 - y0;
    if (!p.half_pixel) {  // malformed RoIs are forced to 1x1
        rw = std::max(rw, 1.0f);
        rh = std::max(rh, 1.0f);
    }
    float bh = rh / float(p.oh), bw = rw / float(p.ow);
    // The adaptive grid comes from the RoI data: a negative or NaN size samples nothing (two negative sizes made a
    // positive count of samples never made), a huge one is capped (RoIs far outside any image).
    auto grid = [](float r, int64_t o) {
        float g = std::ceil(r / float(o));
        return !(g > 0) ? int64_t(0) : g > float(kMaxRoiGrid) ? kMaxRoiGrid : int64_t(g);
    };
    gh = p.sampling > 0 ? p.sampling : grid(rh, p.oh);
    gw = p.sampling > 0 ? p.sampling : grid(rw, p.ow);
    const double total = double(p.oh) * double(p.ow) * double(gh) * double(gw);
    if (total > double(kMaxRoiSamples)) {  // coarser, in proportion, at least 1 x 1
        const double f = std::sqrt(double(kMaxRoiSamples) / total);
        gh = std::max<int64_t>(1, int64_t(double(gh) * f));
        gw = std::max<int64_t>(1, int64_t(double(gw) * f));
    }
    out.clear();
    for (int64_t ph = 0; ph < p.oh; ph++)
        for (int64_t pw = 0; pw < p.ow; pw++)
            for (int64_t iy = 0; iy < gh; iy++) {
                float yy = y0 + float(ph) * bh + float(iy + 0.5f) * bh / float(gh);
                for (int64_t ix = 0; ix < gw; ix++) {
                    float x = x0 + float(pw) * bw + float(ix + 0.5f) * bw / float(gw), y = yy;
                    Sample s{};
                    if (!(y >= -1.0f && y <= float(H) && x >= -1.0f && x <= float(W))) {  // NaN rois too
                        out.push_back(s);
                        continue;
                    }
                    y = std::max(y, 0.0f);
                    x = std::max(x, 0.0f);
                    int64_t ylo = int64_t(y), xlo = int64_t(x), yhi, xhi;
                    if (ylo >= H - 1) {
                        yhi = ylo = H - 1;
                        y = float(ylo);
                    } else yhi = ylo + 1;
                    if (xlo >= W - 1) {
                        xhi = xlo = W - 1;
                        x = float(xlo);
                    } else xhi = xlo + 1;
                    float ly = y - float(ylo), lx = x - float(xlo), hy = 1.0f - ly, hx = 1.0f - lx;
                    s.p[0] = ylo * W + xlo;
                    s.p[1] = ylo * W + xhi;
                    s.p[2] = yhi * W + xlo;
                    s.p[3] = yhi * W + xhi;
                    s.w[0] = hy * hx;
                    s.w[1] = hy * lx;
                    s.w[2] = ly * hx;
                    s.w[3] = ly * lx;
                    out.push_back(s);
                }
            }
}

}  // namespace

void roi_align_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RoiAlignKernelParams& p = *static_cast<const RoiAlignKernelParams*>(ud);
    const ggml_tensor *X = dst->src[0], *R = dst->src[1], *BI = dst->src[2];
    int64_t W = X->ne[0], H = X->ne[1], C = X->ne[2], N = X->ne[3], nroi = dst->ne[3];
    const float* xd = static_cast<const float*>(X->data);
    const float* rd = static_cast<const float*>(R->data);
    float* y = static_cast<float*>(dst->data);
    std::vector<Sample> smp;
    int64_t cur = -1, gh = 0, gw = 0;
    int64_t total = nroi * C, per = (total + nth - 1) / nth, i0 = std::min(total, per * ith),
            i1 = std::min(total, i0 + per);
    for (int64_t item = i0; item < i1; item++) {
        int64_t r = item / C, c = item % C;
        if (r != cur) {
            roi_samples(p, rd + r * R->ne[0], H, W, smp, gh, gw);
            cur = r;
        }
        int64_t bi = BI->type == GGML_TYPE_I32 ? int64_t(static_cast<const int32_t*>(BI->data)[r])
                                               : int64_t(static_cast<const float*>(BI->data)[r]);
        float* o = y + item * p.oh * p.ow;
        if (bi < 0 || bi >= N) {
            std::fill(o, o + p.oh * p.ow, NAN);
            continue;
        }
        const float* img = xd + (bi * C + c) * H * W;
        int64_t count = std::max<int64_t>(gh * gw, 1);
        size_t si = 0;
        for (int64_t cell = 0; cell < p.oh * p.ow; cell++) {
            float acc = 0;
            bool first = true;
            for (int64_t g = 0; g < gh * gw; g++, si++) {
                const Sample& s = smp[si];
                if (p.max_mode) {  // the reference takes the largest weighted corner, not the interpolated value
                    float v = std::max({s.w[0] * img[s.p[0]], s.w[1] * img[s.p[1]], s.w[2] * img[s.p[2]],
                                        s.w[3] * img[s.p[3]]});
                    acc = first ? v : std::max(acc, v);
                    first = false;
                } else
                    acc += s.w[0] * img[s.p[0]] + s.w[1] * img[s.p[1]] + s.w[2] * img[s.p[2]] + s.w[3] * img[s.p[3]];
            }
            o[cell] = p.max_mode ? acc : acc / float(count);
        }
    }
}

}  // namespace o2g
