// The o2g:: kernel entry points of a build with run-time CPU dispatch: the kernel files are compiled once per
// x86-64 level (namespaces isa_v2, isa_v3, isa_v4; see kernels/isa.h and CMakeLists.txt), and each entry point
// forwards to the level cpu_level() picked. Only graph building calls these, so the switch costs nothing per run.
#if defined(O2G_CPU_DISPATCH)
#include "kernels/attention.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_pointwise.h"
#include "kernels/cpu_level.h"
#include "kernels/depthwise.h"
#include "kernels/elementwise.h"
#include "kernels/gelu.h"
#include "kernels/gemm.h"
#include "kernels/max_pool.h"
#include "kernels/normalization.h"
#include "kernels/winograd.h"

// Every entry point the rest of the library calls: return type, name, parameters, arguments.
#define O2G_KERNEL_ENTRY_POINTS(X)                                                                               \
    X(int, winograd_tile, (int64_t px), (px))                                                                    \
    X(ggml_tensor*, conv2d_winograd,                                                                             \
      (Ctx & c, int m, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b, int pw, int ph, ConvClamp a),             \
      (c, m, x, w, b, pw, ph, a))                                                                                \
    X(ggml_tensor*, conv2d_depthwise,                                                                            \
      (Ctx & c, ggml_tensor* x, ggml_tensor* k, ggml_tensor* b, int sw, int sh, int pw, int ph),                 \
      (c, x, k, b, sw, sh, pw, ph))                                                                              \
    X(ggml_tensor*, conv2d_direct_clamp,                                                                         \
      (Ctx & c, ggml_tensor* x, ggml_tensor* k, ggml_tensor* b, int sw, int sh, int pw, int ph, ConvClamp a),    \
      (c, x, k, b, sw, sh, pw, ph, a))                                                                           \
    X(ggml_tensor*, conv2d_pointwise, (Ctx & c, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b, ConvClamp a),   \
      (c, x, w, b, a))                                                                                           \
    X(ggml_tensor*, transpose_blocked, (Ctx & c, ggml_tensor* x), (c, x))                                        \
    X(ggml_tensor*, attention_kernel,                                                                            \
      (Ctx & c, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, float s, ggml_tensor* m, bool z),                \
      (c, q, k, v, s, m, z))                                                                                     \
    X(ggml_tensor*, group_norm_kernel,                                                                           \
      (Ctx & c, ggml_tensor* x, ggml_tensor* g, ggml_tensor* b, int64_t n, float e), (c, x, g, b, n, e))         \
    X(ggml_tensor*, max_pool2d_kernel, (Ctx & c, ggml_tensor* x, const MaxPoolGeom& g), (c, x, g))               \
    X(ggml_tensor*, mean_rows_kernel, (Ctx & c, ggml_tensor* x), (c, x))                                         \
    X(bool, gemm_available, (), ())                                                                              \
    X(bool, gemm_wanted, (int64_t m, int64_t k, int64_t n), (m, k, n))                                           \
    X(ggml_tensor*, gemm_const,                                                                                  \
      (Ctx & c, ggml_tensor* x, ggml_tensor* w, bool nk, ggml_tensor* b, const GemmEpilogue& e),                 \
      (c, x, w, nk, b, e))                                                                                       \
    X(ggml_tensor*, gemm_const_rows,                                                                             \
      (Ctx & c, ggml_tensor* x, ggml_tensor* w, int64_t n, ggml_tensor* b, bool t, ConvClamp a),                 \
      (c, x, w, n, b, t, a))                                                                                     \
    X(ggml_tensor*, gemm_row_panels, (Ctx & c, ggml_tensor* w, int64_t n), (c, w, n))                            \
    X(ggml_tensor*, gemm_batched, (Ctx & c, ggml_tensor* x, ggml_tensor* p, int64_t n, bool t), (c, x, p, n, t)) \
    X(ggml_tensor*, gelu_erf_vec, (Ctx & c, ggml_tensor* x), (c, x))                                             \
    X(ggml_tensor*, gelu_erf_input, (ggml_tensor* y), (y))                                                       \
    X(ggml_tensor*, mul_gelu_vec, (Ctx & c, ggml_tensor* a, ggml_tensor* g), (c, a, g))                          \
    X(ggml_tensor*, broadcast_arith, (Ctx & c, ggml_tensor* a, ggml_tensor* b, ArithK k), (c, a, b, k))          \
    X(ggml_tensor*, hard_swish_cpu, (Ctx & c, ggml_tensor* x, float a, float b), (c, x, a, b))

namespace o2g {

#define O2G_DECLARE(R, name, params, args) R name params;
namespace isa_v2 {
O2G_KERNEL_ENTRY_POINTS(O2G_DECLARE)
}
namespace isa_v3 {
O2G_KERNEL_ENTRY_POINTS(O2G_DECLARE)
}
namespace isa_v4 {
O2G_KERNEL_ENTRY_POINTS(O2G_DECLARE)
}

#define O2G_FORWARD(R, name, params, args)          \
    R name params {                                 \
        switch (cpu_level()) {                      \
            case 4: return isa_v4::name args;       \
            case 3: return isa_v3::name args;       \
            default: return isa_v2::name args;      \
        }                                           \
    }
O2G_KERNEL_ENTRY_POINTS(O2G_FORWARD)

}  // namespace o2g
#endif
