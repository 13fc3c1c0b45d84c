// Detection ONNX ops: NonMaxSuppression (10, 11; on the host: the output length depends on the values),
// RoiAlign (10; coordinate_transformation_mode from 16; 22).
#include <algorithm>

#include "ops/host.h"
#include "ops/op.h"

namespace onnx2ggml {

// ---- NonMaxSuppression (10, host: the output length depends on the values) ----
void host_NonMaxSuppression(Lower& L) {
    const HostTensor& boxes = L.h(0);
    const HostTensor& scores = L.h(1);
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4) L.error("boxes must have shape (batch, boxes, 4)");
    if (scores.shape.size() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
        L.error("scores must have shape (batch, classes, boxes)");
    int64_t NB = boxes.shape[0], NBox = boxes.shape[1], NC = scores.shape[1];
    int64_t max_out = 0;
    float iou_th = 0, score_th = 0;
    bool has_score = false;
    if (L.has(2) && L.h(2).numel() > 0) max_out = std::max<int64_t>(L.h(2).i64(0), 0);
    if (L.has(3) && L.h(3).numel() > 0) iou_th = float(L.h(3).f64(0));
    if (L.has(4) && L.h(4).numel() > 0) {
        score_th = float(L.h(4).f64(0));
        has_score = true;
    }
    int64_t cpb = L.node.get_int("center_point_box", 0);
    if (cpb != 0 && cpb != 1) L.error("center_point_box must be 0 or 1");
    auto bx = boxes.to_f32(), sc = scores.to_f32();
    // Box edges as (xmin, xmax, ymin, ymax), computed in float like the reference.
    auto edges = [&](int64_t b, int64_t i, float e[4]) {
        const float* v = bx.data() + (b * NBox + i) * 4;
        if (cpb == 0) {
            e[0] = std::min(v[1], v[3]);
            e[1] = std::max(v[1], v[3]);
            e[2] = std::min(v[0], v[2]);
            e[3] = std::max(v[0], v[2]);
        } else {
            float hw = v[2] / 2, hh = v[3] / 2;
            e[0] = v[0] - hw;
            e[1] = v[0] + hw;
            e[2] = v[1] - hh;
            e[3] = v[1] + hh;
        }
    };
    auto suppress = [&](int64_t b, int64_t i, int64_t j) {
        float a[4], c[4];
        edges(b, i, a);
        edges(b, j, c);
        float ix0 = std::max(a[0], c[0]), ix1 = std::min(a[1], c[1]);
        if (ix1 <= ix0) return false;
        float iy0 = std::max(a[2], c[2]), iy1 = std::min(a[3], c[3]);
        if (iy1 <= iy0) return false;
        float inter = (ix1 - ix0) * (iy1 - iy0);
        if (inter <= 0) return false;
        float a1 = (a[1] - a[0]) * (a[3] - a[2]), a2 = (c[1] - c[0]) * (c[3] - c[2]);
        float uni = a1 + a2 - inter;
        if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
        return inter / uni > iou_th;
    };
    std::vector<int64_t> out;
    std::vector<int64_t> cand, sel;
    for (int64_t b = 0; b < NB; b++)
        for (int64_t c = 0; c < NC; c++) {
            const float* s = sc.data() + (b * NC + c) * NBox;
            cand.clear();
            for (int64_t i = 0; i < NBox; i++)
                if (!has_score || s[i] > score_th) cand.push_back(i);
            std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
            sel.clear();
            for (int64_t i : cand) {
                if (int64_t(sel.size()) >= max_out) break;
                bool keep = true;
                for (int64_t j : sel)
                    if (suppress(b, i, j)) {
                        keep = false;
                        break;
                    }
                if (!keep) continue;
                sel.push_back(i);
                out.insert(out.end(), {b, c, i});
            }
        }
    L.out_host(0, HostTensor::from_i64(DType::INT64, {int64_t(out.size() / 3), 3}, out));
}

// ---- RoiAlign ----
// RoiAlign-10 maps output_half_pixel; 16 added coordinate_transformation_mode, default half_pixel.
static void roi_align(Lower& L, const char* default_ctm) {
    if (L.rank(0) != 4) L.error("X must be 4-D (N, C, H, W)");
    const Shape &rs = L.shape(1), &bs = L.shape(2);
    if (rs.size() != 2 || rs[1] != 4) L.error("rois must have shape (num_rois, 4)");
    if (bs.size() != 1 || bs[0] != rs[0]) L.error("batch_indices must have shape (num_rois)");
    o2g::RoiAlignParams p;
    p.output_height = L.node.get_int("output_height", 1);
    p.output_width = L.node.get_int("output_width", 1);
    p.sampling_ratio = L.node.get_int("sampling_ratio", 0);
    p.spatial_scale = L.node.get_float("spatial_scale", 1.0f);
    if (p.output_height < 1 || p.output_width < 1) L.error("output_height and output_width must be positive");
    if (p.sampling_ratio < 0) L.error("sampling_ratio must be >= 0");
    std::string ctm = L.node.get_string("coordinate_transformation_mode", default_ctm);
    if (ctm != "half_pixel" && ctm != "output_half_pixel") L.error("unknown coordinate_transformation_mode '" + ctm + "'");
    p.half_pixel = ctm == "half_pixel";
    std::string mode = L.node.get_string("mode", "avg");
    if (mode != "avg" && mode != "max") L.error("unknown mode '" + mode + "'");
    p.max_mode = mode == "max";
    const Shape& xs = L.shape(0);
    if (rs[0] == 0) L.error("no RoIs: the output would be empty, which ggml cannot hold");
    if (const HostTensor* bi = L.in(2).host.get())  // checked when known; the kernel fills bad RoIs with NaN
        for (int64_t i = 0; i < bi->numel(); i++)
            if (bi->i64(i) < 0 || bi->i64(i) >= xs[0]) L.error("batch index " + std::to_string(bi->i64(i)) + " out of range");
    ggml_tensor *x = L.t(0), *rois = L.t(1), *bi = L.t(2);
    L.out(0, O2G_CALL(L, o2g::roi_align, x, rois, bi, p), L.dtype(0), 4);
}
void lower_RoiAlign_10(Lower& L) { roi_align(L, "output_half_pixel"); }
void lower_RoiAlign(Lower& L) { roi_align(L, "half_pixel"); }

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& detection_ops() {
    static const std::vector<OpDef> t = {
        {.op = "NonMaxSuppression", .since = 10, .host = host_NonMaxSuppression, .host_inputs = {0,1,2,3,4}},
        {.op = "RoiAlign", .since = 10, .ggml = lower_RoiAlign_10, .math = true},
        {.op = "RoiAlign", .since = 16, .ggml = lower_RoiAlign, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
