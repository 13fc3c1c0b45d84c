// Ops not yet moved to their family file.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

// A constant weight (input i) transformed once on the host and cached on the device under its name + suffix,
// stored as `type` (F32, or the reduced precision of --weights for matrix-product weights).
ggml_tensor* cached_weight(Lower& L, int i, const std::string& suffix, HostTensor (*fn)(const HostTensor&),
                           ggml_type type = GGML_TYPE_F32);

namespace {

// Device permute with ONNX perm semantics (output axis i = input axis perm[i]).
ggml_tensor* permute_onnx(Lower& L, ggml_tensor* x, int r, const std::vector<int>& perm) {
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (id) return x;
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    return ggml_cont(L.ctx, ggml_permute(L.ctx, x, g[0], g[1], g[2], g[3]));
}


}

}  // namespace

}  // namespace onnx2ggml
