// Host functions (onnx2ggml/ops/host.h): elementwise math, Where, Cast, Range, ConstantOfShape, reductions,
// ArgMax/ArgMin, and host values as device constants.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ggml-backend.h"
#include "lib/host_util.h"
#include "onnx2ggml/ops.h"

namespace o2g {

using onnx2ggml::broadcast_index;
using onnx2ggml::dtype_is_float;
using onnx2ggml::dtype_size;
using onnx2ggml::shape_numel;

namespace {

const char* dtype_enum(DType t) {
    switch (t) {
        case DType::FLOAT: return "FLOAT";
        case DType::UINT8: return "UINT8";
        case DType::INT8: return "INT8";
        case DType::UINT16: return "UINT16";
        case DType::INT16: return "INT16";
        case DType::INT32: return "INT32";
        case DType::INT64: return "INT64";
        case DType::BOOL: return "BOOL";
        case DType::FLOAT16: return "FLOAT16";
        case DType::DOUBLE: return "DOUBLE";
        case DType::UINT32: return "UINT32";
        case DType::UINT64: return "UINT64";
        case DType::BFLOAT16: return "BFLOAT16";
        default: return nullptr;
    }
}

// Comparison or logic (0 ==, 1 <, 2 <=, 3 >, 4 >=, 5 and, 6 or, 7 xor) on two values of one type.
template <typename T>
T compare(int op, T a, T b) {
    switch (op) {
        case 0: return a == b;
        case 1: return a < b;
        case 2: return a <= b;
        case 3: return a > b;
        case 4: return a >= b;
        case 5: return a != 0 && b != 0;
        case 6: return a != 0 || b != 0;
        default: return (a != 0) != (b != 0);
    }
}

double apply_f(int fn, const double* v, size_t n) {
    switch (fn) {
        case HOST_ADD: return v[0] + v[1];
        case HOST_SUB: return v[0] - v[1];
        case HOST_MUL: return v[0] * v[1];
        case HOST_DIV: return v[0] / v[1];
        case HOST_POW: return std::pow(v[0], v[1]);
        case HOST_MOD: case HOST_FMOD: {
            double r = std::fmod(v[0], v[1]);
            if (fn == HOST_MOD && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
            return r;
        }
        case HOST_SUM: case HOST_MEAN: {
            double s = 0;
            for (size_t i = 0; i < n; i++) s += v[i];
            return fn == HOST_MEAN ? s / double(n) : s;
        }
        case HOST_MAX: case HOST_MIN: {
            double s = v[0];
            for (size_t i = 1; i < n; i++) {
                if (std::isnan(v[i]) || std::isnan(s)) s = NAN;
                else s = fn == HOST_MAX ? std::max(s, v[i]) : std::min(s, v[i]);
            }
            return s;
        }
        case HOST_EQUAL: case HOST_LESS: case HOST_LESS_OR_EQUAL: case HOST_GREATER: case HOST_GREATER_OR_EQUAL:
        case HOST_AND: case HOST_OR: case HOST_XOR: return compare(fn - HOST_EQUAL, v[0], v[1]);
        case HOST_NEG: return -v[0];
        case HOST_ABS: return std::fabs(v[0]);
        case HOST_SIGN: return double((v[0] > 0) - (v[0] < 0));
        case HOST_FLOOR: return std::floor(v[0]);
        case HOST_CEIL: return std::ceil(v[0]);
        case HOST_ROUND: return std::nearbyint(v[0]);
        case HOST_SQRT: return std::sqrt(v[0]);
        case HOST_RECIPROCAL: return 1.0 / v[0];
        case HOST_EXP: return std::exp(v[0]);
        case HOST_LOG: return std::log(v[0]);
        case HOST_RELU: return v[0] > 0 ? v[0] : 0.0;
        case HOST_CLIP: return std::isnan(v[0]) ? v[0] : std::min(v[2], std::max(v[1], v[0]));
    }
    throw OpError("host function " + std::to_string(fn) + " does not take floats");
}

// bits and is_signed: the integer type of the first input (for BitShift).
int64_t apply_i(int fn, const int64_t* v, size_t n, int bits, bool is_signed) {
    auto u = [](int64_t x) { return uint64_t(x); };
    switch (fn) {
        case HOST_ADD: return int64_t(u(v[0]) + u(v[1]));
        case HOST_SUB: return int64_t(u(v[0]) - u(v[1]));
        case HOST_MUL: return int64_t(u(v[0]) * u(v[1]));
        case HOST_DIV:
            if (v[1] == 0) return 0;
            if (v[1] == -1) return int64_t(0 - u(v[0]));
            return v[0] / v[1];
        case HOST_POW: {  // by squaring, wrapping as a fixed-width integer does (an exponent from a file may be 2^62)
            uint64_t r = 1, b = u(v[0]);
            for (uint64_t e = u(v[1]); v[1] > 0 && e; e >>= 1, b *= b)
                if (e & 1) r *= b;
            return v[1] < 0 ? (v[0] == 1 ? 1 : 0) : int64_t(r);
        }
        case HOST_MOD: case HOST_FMOD: {
            if (v[1] == 0) return 0;
            int64_t r = v[0] % v[1];
            if (fn == HOST_MOD && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
            return r;
        }
        case HOST_SUM: case HOST_MEAN: {
            int64_t s = 0;
            for (size_t i = 0; i < n; i++) s = int64_t(u(s) + u(v[i]));
            return fn == HOST_MEAN ? s / int64_t(n) : s;
        }
        case HOST_MAX: case HOST_MIN: {
            int64_t s = v[0];
            for (size_t i = 1; i < n; i++) s = fn == HOST_MAX ? std::max(s, v[i]) : std::min(s, v[i]);
            return s;
        }
        case HOST_EQUAL: case HOST_LESS: case HOST_LESS_OR_EQUAL: case HOST_GREATER: case HOST_GREATER_OR_EQUAL:
        case HOST_AND: case HOST_OR: case HOST_XOR: return compare(fn - HOST_EQUAL, v[0], v[1]);
        case HOST_NOT: return v[0] == 0;
        case HOST_NEG: return int64_t(0 - u(v[0]));
        case HOST_ABS: return v[0] < 0 ? int64_t(0 - u(v[0])) : v[0];
        case HOST_SIGN: return (v[0] > 0) - (v[0] < 0);
        case HOST_RELU: return v[0] > 0 ? v[0] : 0;
        case HOST_CLIP: return std::min(v[2], std::max(v[1], v[0]));
        case HOST_BITSHIFT_LEFT: case HOST_BITSHIFT_RIGHT: {
            // Signed types (BitShift-28) shift right arithmetically; too wide or negative shifts leave the sign fill.
            if (is_signed && fn == HOST_BITSHIFT_RIGHT)
                return v[1] >= bits || v[1] < 0 ? (v[0] < 0 ? -1 : 0) : v[0] >> v[1];
            uint64_t x = u(v[0]);
            if (bits < 64) x &= (uint64_t(1) << bits) - 1;
            if (v[1] >= bits || v[1] < 0) return 0;
            return int64_t(fn == HOST_BITSHIFT_RIGHT ? x >> v[1] : x << v[1]);
        }
        case HOST_BITWISE_AND: return v[0] & v[1];
        case HOST_BITWISE_OR: return v[0] | v[1];
        case HOST_BITWISE_XOR: return v[0] ^ v[1];
        case HOST_BITWISE_NOT: return ~v[0];
    }
    throw OpError("host function " + std::to_string(fn) + " does not take integers");
}

bool int_only(int fn) { return fn == HOST_NOT || (fn >= HOST_BITSHIFT_LEFT && fn <= HOST_BITWISE_NOT); }
bool float_only(int fn) {
    return fn == HOST_FLOOR || fn == HOST_CEIL || fn == HOST_ROUND || fn == HOST_SQRT || fn == HOST_RECIPROCAL ||
           fn == HOST_EXP || fn == HOST_LOG;
}

}  // namespace

void HostMapParams::fields(FieldWriter& f) const {
    static const char* names[] = {
        "HOST_ADD", "HOST_SUB", "HOST_MUL", "HOST_DIV", "HOST_POW", "HOST_MOD", "HOST_FMOD", "HOST_SUM", "HOST_MAX",
        "HOST_MIN", "HOST_MEAN", "HOST_EQUAL", "HOST_LESS", "HOST_LESS_OR_EQUAL", "HOST_GREATER",
        "HOST_GREATER_OR_EQUAL", "HOST_AND", "HOST_OR", "HOST_XOR", "HOST_NOT", "HOST_NEG", "HOST_ABS", "HOST_SIGN",
        "HOST_FLOOR", "HOST_CEIL", "HOST_ROUND", "HOST_SQRT", "HOST_RECIPROCAL", "HOST_EXP", "HOST_LOG", "HOST_RELU",
        "HOST_BITSHIFT_LEFT", "HOST_BITSHIFT_RIGHT", "HOST_BITWISE_AND", "HOST_BITWISE_OR", "HOST_BITWISE_XOR",
        "HOST_BITWISE_NOT", "HOST_CLIP"};
    f.field("fn", fn >= 0 && fn <= HOST_CLIP ? std::string("o2g::") + names[fn] : std::to_string(fn));
    f.field("out", dtype_literal(out));
    if (b_trailing) f("b_trailing", b_trailing);
}

std::string dtype_literal(DType t) {
    const char* d = dtype_enum(t);
    return d ? std::string("o2g::DType::") + d : "o2g::DType(" + std::to_string(int(t)) + ")";
}

HostTensor host_map(const std::vector<HostTensor>& xs_in, const HostMapParams& p) {
    if (xs_in.empty()) throw OpError("host_map needs an input");
    if (p.fn == HOST_POW && xs_in.size() < 2) throw OpError("Pow needs two inputs");  // found by tests/fuzz
    std::vector<HostTensor> aligned;
    if (p.b_trailing > 0 && xs_in.size() > 1) {  // B's shape gets trailing 1s; the data stays
        aligned = xs_in;
        aligned[1].shape.insert(aligned[1].shape.end(), size_t(p.b_trailing), 1);
    }
    const std::vector<HostTensor>& xs = aligned.empty() ? xs_in : aligned;
    size_t n = xs.size();
    bool clip = p.fn == HOST_CLIP;
    size_t nb = clip ? 1 : n;  // Clip's bounds are scalars, not broadcast inputs
    Shape out = xs[0].shape;
    bool use_int = !dtype_is_float(xs[0].dtype);
    for (size_t i = 1; i < nb; i++) {
        out = broadcast_shape(out, xs[i].shape);
        if (dtype_is_float(xs[i].dtype)) use_int = false;
    }
    if (int_only(p.fn)) use_int = true;
    if (float_only(p.fn)) use_int = false;
    if (p.fn == HOST_POW) use_int = !dtype_is_float(xs[0].dtype) && !dtype_is_float(xs[1].dtype);
    std::vector<std::vector<int64_t>> idx;
    for (size_t i = 0; i < nb; i++) idx.push_back(broadcast_index(xs[i].shape, out));
    HostTensor r = HostTensor::alloc(p.out, out);
    int bits = int(dtype_size(xs[0].dtype)) * 8;
    const DType t0 = xs[0].dtype;
    const bool is_signed = t0 == DType::INT8 || t0 == DType::INT16 || t0 == DType::INT32 || t0 == DType::INT64;
    std::vector<double> fa(std::max<size_t>(n, 3));
    std::vector<int64_t> ia(std::max<size_t>(n, 3));
    if (clip) {  // absent bounds are empty tensors
        bool have_lo = n > 1 && xs[1].numel() > 0, have_hi = n > 2 && xs[2].numel() > 0;
        fa[1] = have_lo ? xs[1].f64(0) : use_int ? -9.3e18 : -INFINITY;
        fa[2] = have_hi ? xs[2].f64(0) : use_int ? 9.3e18 : INFINITY;
        ia[1] = have_lo ? xs[1].i64(0) : INT64_MIN;
        ia[2] = have_hi ? xs[2].i64(0) : INT64_MAX;
        if (fa[1] > fa[2]) fa[1] = fa[2];
        if (ia[1] > ia[2]) ia[1] = ia[2];
    }
    for (int64_t k = 0; k < r.numel(); k++) {
        if (use_int) {
            for (size_t j = 0; j < nb; j++) ia[j] = xs[j].i64(idx[j][size_t(k)]);
            r.set_i64(k, apply_i(p.fn, ia.data(), n, bits, is_signed));
        } else {
            for (size_t j = 0; j < nb; j++) fa[j] = xs[j].f64(idx[j][size_t(k)]);
            r.set_f64(k, apply_f(p.fn, fa.data(), n));
        }
    }
    return r;
}

HostTensor host_where(const HostTensor& c, const HostTensor& a, const HostTensor& b) {
    Shape out = broadcast_shape(broadcast_shape(c.shape, a.shape), b.shape);
    auto ic = broadcast_index(c.shape, out), ia = broadcast_index(a.shape, out), ib = broadcast_index(b.shape, out);
    if (a.dtype != b.dtype) throw OpError("Where: branches of different types");
    HostTensor r = HostTensor::alloc(a.dtype, out);
    size_t es = dtype_size(r.dtype);
    for (int64_t k = 0; k < r.numel(); k++) {
        bool sel = c.i64(ic[size_t(k)]) != 0;
        const HostTensor& s = sel ? a : b;
        int64_t j = sel ? ia[size_t(k)] : ib[size_t(k)];
        std::memcpy(r.mut() + size_t(k) * es, s.data + size_t(j) * es, es);
    }
    return r;
}

HostTensor host_cast(const HostTensor& x, DType to, bool saturate, int64_t e8m0_round) {
    return x.cast(to, saturate, int(e8m0_round));
}

HostTensor host_quantize_narrow(const HostTensor& x, const HostTensor& scale, const HostTensor& zero_point,
                                int64_t axis, int64_t block, bool saturate) {
    const Shape& xs = x.shape;
    const int64_t ns = scale.numel(), n = x.numel();
    if (zero_point.numel() != ns) throw OpError("zero point and scale sizes differ");
    if (ns != 1 && (axis < 0 || axis >= int64_t(xs.size()))) throw OpError("axis out of range");
    int64_t inner = 1, A = ns == 1 ? 1 : xs[size_t(axis)];
    for (size_t d = size_t(axis) + 1; ns != 1 && d < xs.size(); d++) inner *= xs[d];
    const int64_t nb = block > 0 ? (A + block - 1) / block : A;
    if (ns != 1 && (block > 0 ? ns != n / std::max<int64_t>(A, 1) * nb : ns != A))
        throw OpError("scale has " + std::to_string(ns) + " elements, which fits neither the axis nor its blocks");
    HostTensor y = HostTensor::alloc(zero_point.dtype, xs);
    for (int64_t i = 0; i < n; i++) {
        int64_t q = 0;
        if (ns != 1) {
            const int64_t in = i % inner, a = (i / inner) % A, o = i / (inner * A);
            q = block > 0 ? (o * nb + a / block) * inner + in : a;
        }
        // float32 arithmetic, as the reference computes it
        const float v = float(x.f64(i)) / float(scale.f64(q)) + float(zero_point.f64(q));
        y.set_f64(i, v, saturate, onnx2ggml::E8M0_UP);
    }
    return y;
}

HostTensor host_bitcast(const HostTensor& x, DType to) {
    if (!onnx2ggml::dtype_supported(to) || dtype_size(to) == 0) throw OpError("BitCast to an unsupported type");
    if (dtype_size(to) != dtype_size(x.dtype)) throw OpError("BitCast needs input and output types of the same width");
    HostTensor o = x;
    o.dtype = to;
    return o;
}

HostTensor host_eye_like(const Ints& shape, DType type, int64_t k) {
    if (shape.size() != 2) throw OpError("EyeLike needs rank 2");
    HostTensor out = HostTensor::alloc(type, shape);
    for (int64_t i = 0; i < shape[0]; i++)
        if (i + k >= 0 && i + k < shape[1]) out.set_i64(i * shape[1] + i + k, 1);
    return out;
}

HostTensor host_range(const HostTensor& start, const HostTensor& limit, const HostTensor& delta) {
    if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
        throw OpError("Range takes scalar start, limit and delta");
    DType dt = start.dtype;
    const int64_t max_len = int64_t(1) << 31;
    if (dtype_is_float(dt)) {
        double st = start.f64(0), lim = limit.f64(0), d = delta.f64(0);
        if (d == 0) throw OpError("Range delta is 0");
        double len = std::ceil((lim - st) / d);
        if (!(len < double(max_len))) throw OpError("Range of " + std::to_string(len) + " elements");
        int64_t n = len > 0 ? int64_t(len) : 0;  // a huge negative count is no int64 (a fuzzer finding)
        std::vector<double> v;
        for (int64_t i = 0; i < n; i++)  // float accumulates in float, like the reference
            v.push_back(dt == DType::FLOAT ? double(float(st) + float(i) * float(d)) : st + double(i) * d);
        return HostTensor::from_f64(dt, {n}, v);
    }
    int64_t st = start.i64(0), lim = limit.i64(0), d = delta.i64(0);
    if (d == 0) throw OpError("Range delta is 0");
    double len = std::ceil((double(lim) - double(st)) / double(d));
    if (!(len < double(max_len))) throw OpError("Range of " + std::to_string(len) + " elements");
    int64_t n = std::max<int64_t>(0, d > 0 ? (lim - st + d - 1) / d : (st - lim - d - 1) / (-d));
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; i++) v.push_back(st + i * d);
    return HostTensor::from_i64(dt, {n}, v);
}

HostTensor host_constant_of_shape(const Ints& shape, const HostTensor& value) {
    for (auto d : shape)
        if (d < 0) throw OpError("negative dim in shape " + onnx2ggml::shape_str(shape));
    DType dt = value.numel() ? value.dtype : DType::FLOAT;
    HostTensor out = HostTensor::alloc(dt, shape);  // zeros unless a value is given
    size_t es = dtype_size(dt);
    if (value.numel())
        for (int64_t k = 0; k < out.numel(); k++) std::memcpy(out.mut() + size_t(k) * es, value.data, es);
    return out;
}

namespace {

// Which of a rank-r tensor's axes a reduction over `axes` (all when empty) reduces.
std::vector<bool> reduced_axes(int r, const Ints& axes) {
    std::vector<bool> red(size_t(r), axes.empty());
    for (int64_t a : axes) {
        if (r == 0) continue;  // a scalar's axis 0 names nothing to reduce
        int64_t ax = a < 0 ? a + r : a;
        if (ax < 0 || ax >= r) throw OpError("reduce axis " + std::to_string(a) + " out of range for rank " + std::to_string(r));
        red[size_t(ax)] = true;
    }
    return red;
}

}  // namespace

HostTensor host_reduce(const HostTensor& x, const Ints& axes_in, const HostReduceParams& p) {
    const Shape& in = x.shape;
    int r = int(in.size());
    if (axes_in.empty() && p.noop_with_empty_axes) return x;
    const std::vector<bool> red = reduced_axes(r, axes_in);
    int k = p.kind;
    Shape ks, os;  // keepdims shape for index math, and the output shape
    for (size_t i = 0; i < in.size(); i++) {
        ks.push_back(red[i] ? 1 : in[i]);
        if (!red[i] || p.keepdims) os.push_back(red[i] ? 1 : in[i]);
    }
    int64_t on = shape_numel(ks);
    bool is_int = !dtype_is_float(x.dtype);
    std::vector<double> acc(size_t(on), 0.0), mx(size_t(on), -INFINITY);
    std::vector<int64_t> iacc(size_t(on), 0), cnt(size_t(on), 0);
    if (k == HOST_REDUCE_PROD) {
        std::fill(acc.begin(), acc.end(), 1.0);
        std::fill(iacc.begin(), iacc.end(), 1);
    }
    if (k == HOST_REDUCE_MAX) { std::fill(acc.begin(), acc.end(), -INFINITY); std::fill(iacc.begin(), iacc.end(), INT64_MIN); }
    if (k == HOST_REDUCE_MIN) { std::fill(acc.begin(), acc.end(), INFINITY); std::fill(iacc.begin(), iacc.end(), INT64_MAX); }
    if (x.dtype == DType::BOOL && (k == HOST_REDUCE_MAX || k == HOST_REDUCE_MIN))  // an empty set: false / true
        std::fill(iacc.begin(), iacc.end(), k == HOST_REDUCE_MIN ? 1 : 0);
    auto ost = onnx2ggml::strides_of(ks);
    auto out_index = [&](const std::vector<int64_t>& c) {
        int64_t o = 0;
        for (size_t d = 0; d < in.size(); d++)
            if (!red[d]) o += c[d] * ost[d];
        return size_t(o);
    };
    auto next = [&](std::vector<int64_t>& c) {
        for (int d = int(in.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < in[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    };
    std::vector<int64_t> c(in.size(), 0);
    for (int64_t e = 0; e < x.numel(); e++, next(c)) {
        size_t o = out_index(c);
        double v = x.f64(e);
        int64_t iv = x.i64(e);
        // Integer sums and products wrap as fixed-width integers do (values from a file may overflow).
        const uint64_t ui = uint64_t(iv), ua = uint64_t(iacc[o]);
        switch (k) {
            case HOST_REDUCE_MAX: acc[o] = std::max(acc[o], v); iacc[o] = std::max(iacc[o], iv); break;
            case HOST_REDUCE_MIN: acc[o] = std::min(acc[o], v); iacc[o] = std::min(iacc[o], iv); break;
            case HOST_REDUCE_PROD: acc[o] *= v; iacc[o] = int64_t(ua * ui); break;
            case HOST_REDUCE_L1: acc[o] += std::fabs(v); iacc[o] = int64_t(ua + (iv < 0 ? 0 - ui : ui)); break;
            case HOST_REDUCE_L2: case HOST_REDUCE_SUM_SQUARE: acc[o] += v * v; iacc[o] = int64_t(ua + ui * ui); break;
            case HOST_REDUCE_LOG_SUM_EXP: mx[o] = std::max(mx[o], v); break;
            default: acc[o] += v; iacc[o] = int64_t(ua + ui);
        }
        cnt[o]++;
    }
    if (k == HOST_REDUCE_LOG_SUM_EXP) {  // second pass with the max subtracted
        std::fill(c.begin(), c.end(), 0);
        for (int64_t e = 0; e < x.numel(); e++, next(c)) {
            size_t o = out_index(c);
            acc[o] += std::exp(x.f64(e) - mx[o]);
        }
    }
    HostTensor out = HostTensor::alloc(x.dtype, os);
    for (int64_t o = 0; o < on; o++) {
        double v = acc[size_t(o)];
        switch (k) {
            case HOST_REDUCE_MEAN: v = cnt[size_t(o)] ? v / double(cnt[size_t(o)]) : NAN; break;  // numpy's empty mean
            case HOST_REDUCE_L2: v = std::sqrt(v); break;
            case HOST_REDUCE_LOG_SUM: v = std::log(v); break;
            case HOST_REDUCE_LOG_SUM_EXP: v = std::log(v) + mx[size_t(o)]; break;
            default: break;
        }
        bool float_result = k == HOST_REDUCE_L2 || k == HOST_REDUCE_LOG_SUM || k == HOST_REDUCE_LOG_SUM_EXP;
        if (is_int && k == HOST_REDUCE_MEAN) out.set_i64(o, iacc[size_t(o)] / std::max<int64_t>(1, cnt[size_t(o)]));
        else if (is_int && !float_result) out.set_i64(o, iacc[size_t(o)]);
        else out.set_f64(o, v);
    }
    return out;
}

HostTensor host_reduce_empty(const Ints& shape, DType type, const Ints& axes, const HostReduceParams& p) {
    if (shape_numel(shape) != 0)
        throw OpError("reduction of " + onnx2ggml::shape_str(shape) + " without its data (only empty tensors)");
    return host_reduce(HostTensor::alloc(type, shape), axes, p);
}

HostTensor host_arg(const HostTensor& x, const HostArgParams& p) {
    const Shape& in = x.shape;
    int64_t r = int64_t(in.size()), axis = p.axis < 0 ? p.axis + r : p.axis;
    if (axis < 0 || axis >= std::max<int64_t>(r, 1)) throw OpError("axis " + std::to_string(p.axis) + " out of range");
    Shape os;
    for (int64_t i = 0; i < r; i++)
        if (i != axis) os.push_back(in[size_t(i)]);
        else if (p.keepdims) os.push_back(1);
    int64_t outer = 1, inner = 1, A = r ? in[size_t(axis)] : 1;
    for (int64_t i = 0; i < axis; i++) outer *= in[size_t(i)];
    for (int64_t i = axis + 1; i < r; i++) inner *= in[size_t(i)];
    HostTensor out = HostTensor::alloc(DType::INT64, os);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t best = 0;
            for (int64_t a = 1; a < A; a++) {
                double v = x.f64((o * A + a) * inner + j), b = x.f64((o * A + best) * inner + j);
                bool last = p.select_last_index;
                bool better = p.is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
                if (better) best = a;
            }
            out.set_i64(o * inner + j, best);
        }
    return out;
}

ggml_tensor* host_constant(Ctx& ctx, const HostTensor& h, ggml_type type) {
    if (h.shape.size() > 4) throw OpError("host value of rank " + std::to_string(h.shape.size()) + " as a device tensor");
    int64_t ne[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < h.shape.size(); i++) ne[h.shape.size() - 1 - i] = h.shape[i];
    auto bytes = onnx2ggml::device_bytes(h, type, "host value");
    return ctx.constant(type, ne, bytes.data(), bytes.size());
}

HostTensor host_ints(DType t, const Shape& s, const Ints& v) {
    if (int64_t(v.size()) != shape_numel(s)) throw OpError("host_ints: value count does not match the shape");
    return HostTensor::from_i64(t, s, v);
}
HostTensor host_weight(const ggml_tensor* t, const Shape& s) {
    if (!t || t->type != GGML_TYPE_F32 || ggml_nelements(t) != shape_numel(s))
        throw OpError("host_weight: the weight is not an F32 tensor of " + std::to_string(shape_numel(s)) + " elements");
    HostTensor out = HostTensor::alloc(DType::FLOAT, s);
    const void* stored = t->buffer ? nullptr : t->data ? t->data : building_weight_bytes(t);
    if (t->buffer) ggml_backend_tensor_get(t, out.mut(), 0, out.nbytes);
    else if (stored) std::memcpy(out.mut(), stored, out.nbytes);
    else throw OpError(std::string("host_weight: '") + ggml_get_name(t) + "' has no data");
    return out;
}

HostTensor host_floats(DType t, const Shape& s, const std::vector<double>& v) {
    if (int64_t(v.size()) != shape_numel(s)) throw OpError("host_floats: value count does not match the shape");
    return HostTensor::from_f64(t, s, v);
}

}  // namespace o2g
