// Index helpers shared by host evaluation in the op library and in op-table rows.
#include "lib/host_util.h"

#include <cstring>

#include "onnx2ggml/ops.h"

namespace onnx2ggml {

int64_t host_axis(int64_t axis, int64_t rank, const char* what) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        throw o2g::OpError(std::string(what) + " " + std::to_string(axis) + " out of range for rank " +
                           std::to_string(rank));
    return a;
}

std::vector<int64_t> strides_of(const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (int i = int(s.size()) - 2; i >= 0; i--) st[size_t(i)] = st[size_t(i) + 1] * s[size_t(i) + 1];
    return st;
}

HostTensor host_gather_flat(const HostTensor& src, const Shape& out, const std::vector<int64_t>& map) {
    HostTensor r = HostTensor::alloc(src.dtype, out);
    size_t es = dtype_size(src.dtype);
    for (size_t k = 0; k < map.size(); k++) std::memcpy(r.mut() + k * es, src.data + size_t(map[k]) * es, es);
    return r;
}

HostTensor host_take_rows(const HostTensor& x, int64_t inner, const std::vector<int64_t>& rows, const Shape& os) {
    HostTensor o = HostTensor::alloc(x.dtype, os);
    size_t row = size_t(inner) * dtype_size(x.dtype);
    for (size_t i = 0; i < rows.size(); i++)
        if (rows[i] >= 0 && row) std::memcpy(o.mut() + i * row, x.data + size_t(rows[i]) * row, row);
    return o;
}

std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out) {
    size_t r = out.size();
    std::vector<int64_t> st(r, 0);
    auto ist = strides_of(in);
    for (size_t i = 0; i < in.size(); i++) {
        size_t o = i + (r - in.size());
        st[o] = in[i] == 1 ? 0 : ist[i];
    }
    int64_t n = shape_numel(out);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::vector<int64_t> c(r, 0);
    int64_t cur = 0;
    for (int64_t k = 0; k < n; k++) {
        idx[size_t(k)] = cur;
        for (int d = int(r) - 1; d >= 0; d--) {
            c[size_t(d)]++;
            cur += st[size_t(d)];
            if (c[size_t(d)] < out[size_t(d)]) break;
            cur -= st[size_t(d)] * c[size_t(d)];
            c[size_t(d)] = 0;
        }
    }
    return idx;
}

}  // namespace onnx2ggml

namespace o2g {

Shape broadcast_shape(const Shape& a, const Shape& b) {
    size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t i = 0; i < r; i++) {
        int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
        int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
        if (da != db && da != 1 && db != 1)
            throw OpError("shapes " + onnx2ggml::shape_str(a) + " and " + onnx2ggml::shape_str(b) + " cannot be broadcast");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

}  // namespace o2g
