// CPU kernel of Det (see kernels/linalg.h).
#include "kernels/linalg.h"

#include <cmath>
#include <utility>
#include <vector>

namespace o2g {

void det_kernel(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* a = dst->src[0];
    int64_t M = a->ne[0], nb = ggml_nelements(dst);
    const float* x = static_cast<const float*>(a->data);
    std::vector<double> m(static_cast<size_t>(M * M));
    for (int64_t b = ith; b < nb; b += nth) {
        for (int64_t i = 0; i < M * M; i++) m[size_t(i)] = x[b * M * M + i];
        double det = 1;
        for (int64_t c = 0; c < M && det != 0; c++) {
            int64_t piv = c;
            for (int64_t r = c + 1; r < M; r++)
                if (std::fabs(m[size_t(r * M + c)]) > std::fabs(m[size_t(piv * M + c)])) piv = r;
            if (m[size_t(piv * M + c)] == 0) {
                det = 0;
                break;
            }
            if (piv != c) {
                for (int64_t k = 0; k < M; k++) std::swap(m[size_t(c * M + k)], m[size_t(piv * M + k)]);
                det = -det;
            }
            double d = m[size_t(c * M + c)];
            det *= d;
            for (int64_t r = c + 1; r < M; r++) {
                double f = m[size_t(r * M + c)] / d;
                for (int64_t k = c; k < M; k++) m[size_t(r * M + k)] -= f * m[size_t(c * M + k)];
            }
        }
        static_cast<float*>(dst->data)[b] = float(det);
    }
}

}  // namespace o2g
