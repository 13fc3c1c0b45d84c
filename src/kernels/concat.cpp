// Concatenation as block copies (see concat.h). Along dim d, the output is `outer` pairs of blocks, one of a
// (a's dims 0..d in bytes) then one of b. Threads split the output's bytes evenly, so one big pair (batch 1,
// channel concat) is shared too.
#include "kernels/concat.h"

#include <algorithm>
#include <cstring>

#include "kernels/custom.h"

namespace o2g {

namespace {

struct BlockConcat {
    size_t sa, sb;  // bytes per block of a, of b
};

void concat_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const BlockConcat& p = *static_cast<const BlockConcat*>(ud);
    const char* a = static_cast<const char*>(dst->src[0]->data);
    const char* b = static_cast<const char*>(dst->src[1]->data);
    char* y = static_cast<char*>(dst->data);
    const size_t pair = p.sa + p.sb, total = ggml_nbytes(dst);
    // Thread shares in 64-byte units: no two threads write one cache line.
    const WorkSpan s = work_span(int64_t((total + 63) / 64), ith, nth);
    size_t at = std::min(total, size_t(s.b) * 64);
    const size_t end = std::min(total, size_t(s.e) * 64);
    while (at < end) {
        const size_t o = at / pair, in = at % pair;
        const bool from_a = in < p.sa;
        const size_t off = from_a ? in : in - p.sa, left = (from_a ? p.sa : p.sb) - off;
        const size_t n = std::min(left, end - at);
        std::memcpy(y + at, (from_a ? a + o * p.sa : b + o * p.sb) + off, n);
        at += n;
    }
}

}  // namespace

ggml_tensor* concat_blocks(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, int dim) {
    a = cont(ctx, a);
    b = cont(ctx, b);
    int64_t ne[4] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3]};
    ne[dim] += b->ne[dim];
    size_t sa = ggml_type_size(a->type), sb = sa;
    for (int d = 0; d <= dim; d++) sa *= size_t(a->ne[d]), sb *= size_t(b->ne[d]);
    ggml_tensor* args[2] = {a, b};
    ggml_tensor* y = ggml_custom_4d(ctx, a->type, ne[0], ne[1], ne[2], ne[3], args, 2, concat_kernel,
                                    GGML_N_TASKS_MAX, keep_params(BlockConcat{sa, sb}));
    ctx.label(y, "concat");
    return y;
}

}  // namespace o2g
