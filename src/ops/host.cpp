#include "ops/host.h"

#include <cstring>

namespace onnx2ggml {

std::vector<int64_t> element_offsets(Lower& L, const Shape& data, const HostTensor& idx, int axis) {
    int r = int(data.size());
    if (int(idx.shape.size()) != r) L.error("indices rank must equal data rank");
    auto dst = strides_of(data), ist = strides_of(idx.shape);
    std::vector<int64_t> offs(size_t(idx.numel()));
    for (int64_t k = 0; k < idx.numel(); k++) {
        int64_t off = 0, rem = k;
        for (int d = 0; d < r; d++) {
            int64_t c = rem / ist[size_t(d)];
            rem %= ist[size_t(d)];
            if (d == axis) {
                c = idx.i64(k);
                if (c < 0) c += data[size_t(d)];
                if (c < 0 || c >= data[size_t(d)]) L.error("index " + std::to_string(idx.i64(k)) + " out of range");
            }
            off += c * dst[size_t(d)];
        }
        offs[size_t(k)] = off;
    }
    return offs;
}

}  // namespace onnx2ggml
