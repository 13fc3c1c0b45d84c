// Detection ONNX ops: NonMaxSuppression (10, 11; on the host: the output length depends on the values),
// RoiAlign (10; coordinate_transformation_mode from 16; 22).
#include "ops/host.h"
#include "ops/op.h"

namespace onnx2ggml {

// ---- NonMaxSuppression (10, host: the output length depends on the values) ----
void host_NonMaxSuppression(Lower& L) {
    static const HostTensor absent = HostTensor::alloc(DType::FLOAT, {0});  // an omitted optional input: the default
    auto opt = [&](int i) { return L.has(i) ? L.hv(i) : HostArg{&absent, nullptr}; };
    int64_t cpb = L.node.get_int("center_point_box", 0);
    if (cpb != 0 && cpb != 1) L.error("center_point_box must be 0 or 1");
    O2G_HOST(L, 0, o2g::host_non_max_suppression, L.hv(0), L.hv(1), opt(2), opt(3), opt(4), o2g::HostNmsParams{cpb == 1});
}

// ---- RoiAlign ----
// RoiAlign-10 maps output_half_pixel; 16 added coordinate_transformation_mode, default half_pixel.
static void roi_align(Lower& L, const char* default_ctm) {
    const Shape &rs = L.shape(1), &bs = L.shape(2);
    if (rs.size() != 2 || rs[1] != 4) L.error("rois must have shape (num_rois, 4)");
    if (bs.size() != 1 || bs[0] != rs[0]) L.error("batch_indices must have shape (num_rois)");
    o2g::RoiAlignParams p;
    p.output_height = L.node.get_int("output_height", 1);
    p.output_width = L.node.get_int("output_width", 1);
    p.sampling_ratio = L.node.get_int("sampling_ratio", 0);
    p.spatial_scale = L.node.get_float("spatial_scale", 1.0f);
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
        {.op = "NonMaxSuppression", .since = 10, .accepts = "in=2..5 out=1",
         .host = host_NonMaxSuppression, .host_inputs = {0,1,2,3,4}},
        {.op = "RoiAlign", .since = 10,
         .accepts = "in=3 out=1 r0=4 r1=2 r2=1 @output_height:i=1..65536 @output_width:i=1..65536 @sampling_ratio:i>=0",
         .ggml = lower_RoiAlign_10, .math = true},
        {.op = "RoiAlign", .since = 16,
         .accepts = "in=3 out=1 r0=4 r1=2 r2=1 @output_height:i=1..65536 @output_width:i=1..65536 @sampling_ratio:i>=0",
         .ggml = lower_RoiAlign, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
