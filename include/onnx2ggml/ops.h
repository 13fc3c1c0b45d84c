// onnx2ggml's op library: typed functions that build ggml tensors, one per ONNX op or fused pattern.
//
// `onnx2ggml run` calls them from its op table (the table only reads a node's attributes into the params
// struct), programs written by `onnx2ggml compile` call them from generated code, and hand-written ggml
// programs may call them too, as stable-diffusion.cpp calls its ggml_extend.hpp.
//
// Conventions:
// - Tensors are ggml tensors in ggml order: ONNX [N, C, H, W] is ne = [W, H, C, N]. Axes in params are
//   ggml dims (ONNX axis a of a rank-r tensor is ggml dim r-1-a), already normalized.
// - Every size is read from the input tensors' ne when the graph is built, so one call serves every shape.
// - Float data is F32; integer data on the device is I32; booleans are F32 0/1.
// - A function never reads tensor data: anything that must be known to build the graph (a reshape target,
//   slice bounds) is an argument.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ggml.h"

namespace o2g {

using Ints = std::vector<int64_t>;

// Constant weights as the caller holds them: the host data behind a weight tensor, and tensors derived from a
// weight once (Winograd-transformed, transposed, flipped) and kept for every later graph.
class WeightStore {
public:
    virtual ~WeightStore() = default;
    // Whether `w` is a constant weight this store holds.
    virtual bool is_weight(const ggml_tensor* w) = 0;
    // The tensor made from weight `w` by `make`, once per (w, kind) and kept. `make` reads the weight's values as
    // F32 (ggml order) and writes F32 values for a tensor of ne `ne`, which the store keeps as `type`.
    virtual ggml_tensor* derived(const ggml_tensor* w, const std::string& kind, ggml_type type, const int64_t ne[4],
                                 const std::function<void(const float* src, float* dst)>& make) = 0;
    // F16 where `w` came as f16 and derived forms may keep it so (their values lose nothing), else F32.
    virtual ggml_type source_type(const ggml_tensor* w) { (void)w; return GGML_TYPE_F32; }
    // The f16 data of weight `w` as an F16 tensor (read in place where it can be) where `w` came as f16 and the
    // store keeps such forms, else null: ops that widen as they read (get_rows) then never need `w` itself.
    virtual ggml_tensor* f16_source(const ggml_tensor* w) { (void)w; return nullptr; }
};

// Where op-library functions build: a ggml context (no_alloc) plus what some ops need besides it.
struct Ctx {
    ggml_context* ggml = nullptr;
    // The graph runs on ggml's CPU backend, so our own CPU kernels (Winograd, attention, group norm, exact
    // erf/pow/compare) may be used. Elsewhere only ggml's portable ops are.
    bool cpu = true;
    WeightStore* weights = nullptr;  // null: no derived weights (ops fall back to per-run transforms)
    // Storage type of constant MatMul/Gemm and convolution weights (F16, BF16, Q8_0: reduced precision where rows
    // allow; product_weight_type).
    ggml_type matmul_type = GGML_TYPE_F32;
    // Largest buffer the device allocates (ggml_backend_buft_get_max_size; 0: no limit). Ops that would make one
    // tensor larger split the work (attention's score matrix) so the scheduler keeps it on the device.
    size_t max_alloc = 0;
    // Whether the device computes a node as built (ggml_backend_supports_op; null: every node). Ops with a
    // better form some backends lack (flash attention) build it, ask, and else build the other.
    std::function<bool(const ggml_tensor*)> supports;
    // Precision "fast": reduced-precision forms where a backend has them (flash attention with F16 K and V).
    bool fast = false;
    // The device's flash attention is exact (F32 K, V and sums), so exact mode may use it (o2g::set_device).
    bool exact_flash_attention = true;
    // Convolutions whose im2col would be cut into bands run as ggml_conv_2d_direct (o2g::set_device).
    bool direct_conv = false;
    // Convolution products take the kernel as their first operand, ggml's weight side (o2g::set_device: GPU
    // backends; few output pixels then take the matrix-vector kernels, lavapipe 1.3-1.5x faster, src/lib/conv.cpp).
    bool kernel_first = false;
    // Host data created while building (index tables, masks), uploaded once the graph is allocated.
    std::vector<std::pair<ggml_tensor*, std::vector<uint8_t>>> uploads;
    // Our own kernels by name (stats and profiles show "CUSTOM:<name>").
    std::vector<std::pair<const ggml_tensor*, std::string>> labels;

    operator ggml_context*() const { return ggml; }
    // A constant tensor whose data is uploaded after allocation.
    ggml_tensor* constant(ggml_type type, const int64_t ne[4], const void* data, size_t nbytes);
    ggml_tensor* constant_f32(const int64_t ne[4], const std::vector<float>& v);
    ggml_tensor* ints_tensor(const Ints& v, ggml_type type);  // 1-D I32 or F32 tensor from host integers
    ggml_tensor* floats_tensor(const std::vector<double>& v);  // 1-D F32 tensor from host values
    void label(const ggml_tensor* t, const char* kernel) { labels.emplace_back(t, kernel); }
};

// Raised for arguments an op cannot take (shapes that do not broadcast, out-of-range axes, ...).
struct OpError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Generated code prints params as designated initializers; each params struct lists its fields through this.
struct FieldWriter {
    std::string out;
    std::vector<std::pair<std::string, std::string>> items;  // (name, literal) in order
    void field(const char* name, const std::string& literal);
    void operator()(const char* name, int64_t v);
    void operator()(const char* name, int v) { (*this)(name, int64_t(v)); }
    void operator()(const char* name, bool v);
    void operator()(const char* name, float v);
    void operator()(const char* name, const Ints& v);
    void operator()(const char* name, const std::vector<float>& v);
    std::string str() const { return "{" + out + "}"; }
    // An int field that stands for an enum, written by name ("o2g::AUTO_PAD_VALID"); names[i] names value i.
    void enum_field(const char* name, int v, std::initializer_list<const char*> names) {
        if (v >= 0 && size_t(v) < names.size()) field(name, std::string("o2g::") + names.begin()[v]);
        else (*this)(name, v);
    }
};
std::string float_literal(float f);
std::string ints_literal(const Ints& v);

// Shared layout helpers.
ggml_tensor* cont(Ctx& ctx, ggml_tensor* x);                       // x, made contiguous when it is not
ggml_tensor* f32_cont(Ctx& ctx, ggml_tensor* x);                   // x, contiguous and F32
bool same_ne(const ggml_tensor* a, const ggml_tensor* b);
// ONNX axis `axis` (negative: from the end) of a rank-`rank` tensor as a ggml dim; OpError when out of range.
int ggml_axis(int64_t axis, int rank);
ggml_tensor* repeat_to(Ctx& ctx, ggml_tensor* x, const int64_t ne[4]);  // numpy-style broadcast in ggml dims
ggml_tensor* full_f32(Ctx& ctx, ggml_tensor* x, const int64_t ne[4]);   // x as contiguous F32, broadcast to ne
ggml_tensor* reshape_ne(Ctx& ctx, ggml_tensor* x, const int64_t ne[4]); // x itself when ne match, else reshaped
// ggml_cont(ggml_permute(x, ax)); where x is itself such a copy of a contiguous tensor and the permutations
// cancel, that tensor (no copy).
ggml_tensor* permute_cont(Ctx& ctx, ggml_tensor* x, const int ax[4]);
// [C, W, H, N] (ONNX NHWC) as a contiguous [W, H, C, N], and back: the NHWC contrib ops' layout changes. A copy,
// except where x is the other function's copy of a contiguous tensor (NhwcConv into GroupNorm): that tensor.
ggml_tensor* nhwc_to_nchw(Ctx& ctx, ggml_tensor* x);
ggml_tensor* nchw_to_nhwc(Ctx& ctx, ggml_tensor* x);
void broadcast_ne(const ggml_tensor* a, const ggml_tensor* b, int64_t ne[4]);  // OpError if incompatible
void broadcast_ne(const int64_t a[4], const int64_t b[4], int64_t ne[4]);

}  // namespace o2g

#include "onnx2ggml/ops/activation.h"
#include "onnx2ggml/ops/conv.h"
#include "onnx2ggml/ops/math.h"
#include "onnx2ggml/ops/matmul.h"
#include "onnx2ggml/ops/normalization.h"
#include "onnx2ggml/ops/pool.h"
#include "onnx2ggml/ops/reduction.h"
#include "onnx2ggml/ops/resize.h"
#include "onnx2ggml/ops/movement.h"
#include "onnx2ggml/ops/indexing.h"
#include "onnx2ggml/ops/quantize.h"
#include "onnx2ggml/ops/signal.h"
#include "onnx2ggml/ops/recurrent.h"
#include "onnx2ggml/ops/loss.h"
#include "onnx2ggml/ops/detection.h"
#include "onnx2ggml/ops/attention.h"
#include "onnx2ggml/ops/linalg.h"
#include "onnx2ggml/ops/host.h"
