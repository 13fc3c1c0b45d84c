// Index helpers shared by host evaluation in the op library and in op-table rows.
#include "lib/host_util.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/platform.h"
#include "onnx2ggml/ops.h"

namespace onnx2ggml {

int64_t host_axis(int64_t axis, int64_t rank, const char* what) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        throw o2g::OpError(std::string(what) + " " + std::to_string(axis) + " out of range for rank " +
                           std::to_string(rank));
    return a;
}

size_t machine_memory() {
    static const size_t bytes = [] {
        const uint64_t phys = platform::physical_memory();
        size_t m = phys > 0 ? size_t(phys) : ~size_t(0);
        // A container's limit (cgroup v2, then v1) is what actually bounds us.
        for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
            std::ifstream in(f);
            unsigned long long v = 0;
            if (in >> v && v > 0 && v < m) m = size_t(v);  // "max" fails to parse: no limit
        }
        return m;
    }();
    return bytes;
}

static thread_local size_t t_host_limit = 0;

size_t set_host_memory_limit(size_t limit) {
    size_t old = t_host_limit;
    t_host_limit = limit;
    return old;
}

size_t host_memory_limit() { return t_host_limit ? t_host_limit : machine_memory(); }

std::string bytes_str(double b) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (b >= 1024 && u < 6) b /= 1024, u++;
    char buf[48];
    if (u == 0) snprintf(buf, sizeof buf, "%.0f bytes", b);
    else snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
    return buf;
}

void check_host_size(const Shape& s, size_t elem_bytes, const char* what) {
    uint64_t n = 1, bytes = 0;
    bool overflow = false;
    for (int64_t d : s) {
        if (d < 0) throw o2g::OpError(std::string(what) + " has a negative dim in its shape " + shape_str(s));
        overflow |= __builtin_mul_overflow(n, uint64_t(d), &n);
    }
    overflow |= __builtin_mul_overflow(n, uint64_t(elem_bytes), &bytes) || n > uint64_t(INT64_MAX);
    size_t limit = host_memory_limit();
    if (overflow || bytes > limit) {
        double need = 1;  // in floating point, so that an overflowing size still reads right
        for (int64_t d : s) need *= double(d);
        need *= double(elem_bytes);
        throw o2g::OpError(std::string(what) + " " + shape_str(s) + " needs " + bytes_str(need) + " (" +
                           std::to_string(elem_bytes) + " bytes per element) on the host; the limit is " +
                           bytes_str(double(limit)) + (t_host_limit ? " (max_memory)" : " (the machine's memory)"));
    }
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
    check_host_size(out, sizeof(int64_t), "output (as an index table)");
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
