#include "ops/host.h"

#include <cstring>

namespace onnx2ggml {

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

HostTensor host_map(Lower& L, DType out_dtype, const std::vector<int>& inputs,
                    const std::function<double(const double*)>& f_float,
                    const std::function<int64_t(const int64_t*)>& f_int) {
    Shape out;
    bool use_int = true;
    for (int i : inputs) {
        out = out.empty() && i == inputs[0] ? L.shape(i) : broadcast_shapes(L, out, L.shape(i));
        if (dtype_is_float(L.dtype(i))) use_int = false;
    }
    if (!f_int) use_int = false;
    if (!f_float) use_int = true;
    std::vector<std::vector<int64_t>> idx;
    for (int i : inputs) idx.push_back(broadcast_index(L.shape(i), out));
    HostTensor r = HostTensor::alloc(out_dtype, out);
    int64_t n = r.numel();
    std::vector<double> fa(inputs.size());
    std::vector<int64_t> ia(inputs.size());
    std::vector<const HostTensor*> hs;
    for (int i : inputs) hs.push_back(&L.h(i));
    for (int64_t k = 0; k < n; k++) {
        if (use_int) {
            for (size_t j = 0; j < inputs.size(); j++) ia[j] = hs[j]->i64(idx[j][size_t(k)]);
            r.set_i64(k, f_int(ia.data()));
        } else {
            for (size_t j = 0; j < inputs.size(); j++) fa[j] = hs[j]->f64(idx[j][size_t(k)]);
            r.set_f64(k, f_float(fa.data()));
        }
    }
    return r;
}

}  // namespace onnx2ggml
