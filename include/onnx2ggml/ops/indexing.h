// Op library, Indexing: Gather, GatherElements, GatherND, ScatterND, ScatterElements, TensorScatter, Compress,
// TopK, Trilu, CumSum, CumProd, MaxUnpool, Col2Im.
// Included by onnx2ggml/ops.h; see its conventions. Index data known when the graph is built (indices, masks,
// condition vectors) comes as Ints in ONNX (row-major) order, with the indices' ONNX shape where the output needs it;
// negative indices wrap, out-of-range ones are an OpError.
#pragma once

namespace o2g {

struct GatherParams {
    int axis = 0;  // ggml dim of x
    int rank = 0;  // x's ONNX rank
    void fields(FieldWriter& f) const { f("axis", axis); f("rank", rank); }
};
// ONNX Gather with host indices of ONNX shape indices_shape: the indices' dims replace dim `axis`. For x of
// rank > 4 the result keeps x's layout with `axis` resized to the index count (reshape it afterwards).
ggml_tensor* gather(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape, const GatherParams& p);
// ONNX Gather on the outermost axis with device indices (in range, non-negative): embedding lookups. Indices are
// I32, or F32 holding integers (integer data that went through device math, e.g. T5's relative-position buckets).
ggml_tensor* gather_rows(Ctx& ctx, ggml_tensor* x, ggml_tensor* indices, const GatherParams& p);

struct GatherElementsParams {
    int axis = 0;  // ggml dim of x
    int rank = 0;  // x's ONNX rank (<= 4)
    void fields(FieldWriter& f) const { f("axis", axis); f("rank", rank); }
};
// Output of the indices' shape: element i is x at i's coordinates with `axis` replaced by indices[i].
ggml_tensor* gather_elements(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape,
                             const GatherElementsParams& p);

struct GatherNDParams {
    int rank = 0;             // x's ONNX rank (<= 4)
    int64_t batch_dims = 0;
    void fields(FieldWriter& f) const { f("rank", rank); f("batch_dims", batch_dims); }
};
ggml_tensor* gather_nd(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape,
                       const GatherNDParams& p);

enum ScatterReduction { SCATTER_NONE = 0, SCATTER_ADD = 1, SCATTER_MUL = 2, SCATTER_MAX = 3, SCATTER_MIN = 4 };
struct ScatterNDParams {
    int rank = 0;       // x's ONNX rank (<= 4)
    int reduction = SCATTER_NONE;  // ScatterReduction
    void fields(FieldWriter& f) const {
        f("rank", rank);
        f.enum_field("reduction", reduction,
                     {"SCATTER_NONE", "SCATTER_ADD", "SCATTER_MUL", "SCATTER_MAX", "SCATTER_MIN"});
    }
};
// x with the slices addressed by indices replaced by (or reduced with) updates, in index order. CPU only.
ggml_tensor* scatter_nd(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape,
                        ggml_tensor* updates, const ScatterNDParams& p);

struct ScatterElementsParams {
    int axis = 0;   // ggml dim of x
    int rank = 0;   // x's ONNX rank (<= 4)
    int reduction = SCATTER_NONE;  // ScatterReduction
    void fields(FieldWriter& f) const {
        f("axis", axis);
        f("rank", rank);
        f.enum_field("reduction", reduction,
                     {"SCATTER_NONE", "SCATTER_ADD", "SCATTER_MUL", "SCATTER_MAX", "SCATTER_MIN"});
    }
};
// ScatterElements (and Scatter): updates[i] goes to x at i's coordinates with `axis` replaced by indices[i]. CPU only.
ggml_tensor* scatter_elements(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& indices_shape,
                              ggml_tensor* updates, const ScatterElementsParams& p);

struct TensorScatterParams {
    int axis = 1;          // ggml dim of the sequence axis (not the outermost, the batch)
    int rank = 0;          // cache's ONNX rank (<= 4)
    bool circular = false; // write positions wrap (mode "circular"), else must fit (mode "linear")
    void fields(FieldWriter& f) const { f("axis", axis); f("rank", rank); f("circular", circular); }
};
// cache with update's rows written at write_indices[b] onwards in each batch entry b (empty: 0).
ggml_tensor* tensor_scatter(Ctx& ctx, ggml_tensor* cache, ggml_tensor* update, const Ints& write_indices,
                            const TensorScatterParams& p);

struct CompressParams {
    int axis = -1;  // ggml dim; -1: x flattened
    int rank = 0;   // x's ONNX rank (<= 4)
    void fields(FieldWriter& f) const { f("axis", axis); f("rank", rank); }
};
// The slices along `axis` (or elements) whose condition entry is non-zero. The result must not be empty.
ggml_tensor* compress(Ctx& ctx, ggml_tensor* x, const Ints& condition, const CompressParams& p);

struct TopKParams {
    int axis = 0;          // ggml dim
    int rank = 0;          // x's ONNX rank (<= 4)
    bool largest = true;
    bool indices = false;  // return the indices (I32) instead of the values
    void fields(FieldWriter& f) const { f("axis", axis); f("rank", rank); f("largest", largest); f("indices", indices); }
};
// The k[0] largest (or smallest) values along `axis`, sorted, ties by lower index; or their indices. CPU only.
ggml_tensor* topk(Ctx& ctx, ggml_tensor* x, const Ints& k, const TopKParams& p);

struct TriluParams {
    bool upper = true;
    void fields(FieldWriter& f) const { f("upper", upper); }
};
// x with the elements outside the upper (lower) triangle of each matrix (ggml dims 0, 1) zeroed; k[0] (or 0 when k
// is empty) shifts the diagonal.
ggml_tensor* trilu(Ctx& ctx, ggml_tensor* x, const Ints& k, const TriluParams& p);

struct CumParams {
    int axis = 0;           // ggml dim
    bool exclusive = false;
    bool reverse = false;
    void fields(FieldWriter& f) const { f("axis", axis); f("exclusive", exclusive); f("reverse", reverse); }
};
// Running sum along `axis`.
ggml_tensor* cumsum(Ctx& ctx, ggml_tensor* x, const CumParams& p);
// Running product along `axis` (integers wrap like int64 truncated to I32). CPU only.
ggml_tensor* cumprod(Ctx& ctx, ggml_tensor* x, const CumParams& p);

struct MaxUnpoolParams {
    Ints kernel{};  // ONNX order of the spatial dims
    Ints strides{};  // empty: 1
    Ints pads{};   // [begins..., ends...]; empty: 0
    void fields(FieldWriter& f) const { f("kernel", kernel); f("strides", strides); f("pads", pads); }
};
// x [N, C, spatial...] scattered into zeros at the flat positions `indices` of the unpooled shape, which
// output_shape (ONNX, empty: the unpooled shape itself) may enlarge. CPU only.
ggml_tensor* max_unpool(Ctx& ctx, ggml_tensor* x, const Ints& indices, const Ints& output_shape,
                        const MaxUnpoolParams& p);

struct Col2ImParams {
    Ints dilations{};  // empty: 1
    Ints strides{};  // empty: 1
    Ints pads{};     // [begins..., ends...]; empty: 0
    void fields(FieldWriter& f) const { f("dilations", dilations); f("strides", strides); f("pads", pads); }
};
// x [N, C * prod(block_shape), L] summed into an image [N, C, image_shape...]. CPU only.
ggml_tensor* col2im(Ctx& ctx, ggml_tensor* x, const Ints& image_shape, const Ints& block_shape,
                    const Col2ImParams& p);

}  // namespace o2g
