// Index maps of the indexing and movement ops, computed from ONNX shapes (outermost first) and host index data.
// The op library turns them into row tables for ggml_get_rows or scatter kernels; `onnx2ggml run` uses the same
// maps to evaluate these ops on host data. Bad indices or shapes raise OpError.
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Rows of `inner` elements: output row k is input row rows[k] (-1: zeros); os is the output's ONNX shape.
struct RowMap {
    Ints rows;
    int64_t inner = 1;
    Ints os;
};

// Flat element offsets into data (shape ds): each index replaces the coordinate along ONNX axis `axis` of its
// own position in an index tensor of shape is (GatherElements, ScatterElements).
Ints element_offsets(const Ints& ds, const Ints& idx, const Ints& is, int axis, const char* op);
RowMap gather_nd_rows(const Ints& ds, const Ints& idx, const Ints& is, int64_t batch_dims);
// Flat offsets of every element ScatterND writes, in update order.
Ints scatter_nd_offsets(const Ints& ds, const Ints& idx, const Ints& is);
// axis -1: x flattened.
RowMap compress_rows(const Ints& xs, const Ints& condition, int axis);
// axes are ONNX axes; rows empty when nothing changes.
RowMap center_crop_pad_rows(const Ints& xs, const Ints& shape, const Ints& axes);
RowMap reverse_sequence_rows(const Ints& xs, const Ints& lens, bool batch_major);
// Rows of [cache rows; update rows] that make the output (rows of `inner` along ONNX axis `axis` and after).
RowMap tensor_scatter_rows(const Ints& cs, const Ints& us, const Ints& write_indices, int axis, bool circular);
// Element map (inner 1) of DepthToSpace (or SpaceToDepth when !d2s) on NCHW.
RowMap depth_to_space_map(const Ints& xs, int64_t blocksize, bool crd, bool d2s);  // crd: mode CRD
// Pad: the input index along a dim of size n for output position o - begin (-1: the constant value).
int64_t pad_source(int mode, int64_t o, int64_t n);
// Output offset of each input element (os: the output shape). kernel/strides/pads as the attributes (strides and
// pads may be empty); output_shape empty when not given.
Ints max_unpool_offsets(const Ints& xs, const Ints& indices, const Ints& output_shape, const Ints& kernel,
                        const Ints& strides, const Ints& pads, Ints& os);
// Output offset of each input element, -1 where it falls in the padding.
Ints col2im_offsets(const Ints& xs, const Ints& image_shape, const Ints& block_shape, const Ints& dilations,
                    const Ints& strides, const Ints& pads, Ints& os);

}  // namespace o2g
