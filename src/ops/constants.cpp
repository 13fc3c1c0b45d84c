// Constants and generators, evaluated on the host: Constant (1-23), ConstantOfShape (9-23), Range (11),
// EyeLike (9-22).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/host.h"

namespace onnx2ggml {

void host_Constant(Lower& L) {
    const Node& n = L.node;
    if (const Attribute* a = n.attr("value")) {
        if (!a->t || !dtype_supported(a->t->dtype)) L.error("constant of unsupported type");
        HostTensor h;
        h.dtype = a->t->dtype;
        h.shape = a->t->dims;
        h.data = a->t->data;
        h.nbytes = a->t->nbytes;
        h.keep = a->t->keep;
        return L.out_host(0, h);
    }
    if (const Attribute* a = n.attr("value_float")) return L.out_host(0, HostTensor::from_f64(DType::FLOAT, {}, {a->f}));
    if (const Attribute* a = n.attr("value_int")) return L.out_host(0, HostTensor::from_i64(DType::INT64, {}, {a->i}));
    if (const Attribute* a = n.attr("value_floats")) {
        std::vector<double> v(a->floats.begin(), a->floats.end());
        return L.out_host(0, HostTensor::from_f64(DType::FLOAT, {int64_t(v.size())}, v));
    }
    if (const Attribute* a = n.attr("value_ints"))
        return L.out_host(0, HostTensor::from_i64(DType::INT64, {int64_t(a->ints.size())}, a->ints));
    L.error("constant kind not supported (string or sparse)");
}

void host_ConstantOfShape(Lower& L) {
    Shape s = L.ints(0);
    for (auto d : s)
        if (d < 0) L.error("negative dim in shape " + shape_str(s));
    DType dt = DType::FLOAT;
    const Attribute* a = L.node.attr("value");
    const uint8_t* value = nullptr;
    if (a && a->t) {
        dt = a->t->dtype;
        if (!dtype_supported(dt)) L.error("unsupported value type");
        value = a->t->data;
    }
    HostTensor out = HostTensor::alloc(dt, s);  // zeros unless a value is given
    size_t es = dtype_size(dt);
    if (value)
        for (int64_t k = 0; k < out.numel(); k++) std::memcpy(out.mut() + size_t(k) * es, value, es);
    L.out_host(0, std::move(out));
}

void host_Range(Lower& L) {
    DType dt = L.dtype(0);
    if (dtype_is_float(dt)) {
        double st = L.h(0).f64(0), lim = L.h(1).f64(0), d = L.h(2).f64(0);
        if (d == 0) L.error("Range delta is 0");
        int64_t n = std::max<int64_t>(0, int64_t(std::ceil((lim - st) / d)));
        std::vector<double> v;
        for (int64_t i = 0; i < n; i++) v.push_back(st + double(i) * d);
        if (dt == DType::FLOAT)  // accumulate in float like the reference
            for (int64_t i = 0; i < n; i++) v[size_t(i)] = double(float(st) + float(i) * float(d));
        return L.out_host(0, HostTensor::from_f64(dt, {n}, v));
    }
    int64_t st = L.h(0).i64(0), lim = L.h(1).i64(0), d = L.h(2).i64(0);
    if (d == 0) L.error("Range delta is 0");
    int64_t n = std::max<int64_t>(0, d > 0 ? (lim - st + d - 1) / d : (st - lim - d - 1) / (-d));
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; i++) v.push_back(st + i * d);
    L.out_host(0, HostTensor::from_i64(dt, {n}, v));
}

void host_EyeLike(Lower& L) {
    const Shape& s = L.shape(0);
    if (s.size() != 2) L.error("EyeLike needs rank 2");
    DType dt = L.node.has("dtype") ? DType(int32_t(L.node.get_int("dtype", 1))) : L.dtype(0);
    int64_t k = L.node.get_int("k", 0);
    HostTensor out = HostTensor::alloc(dt, s);
    for (int64_t i = 0; i < s[0]; i++)
        if (i + k >= 0 && i + k < s[1]) out.set_i64(i * s[1] + i + k, 1);
    L.out_host(0, std::move(out));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& constants_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Constant", .since = 1, .host = host_Constant},
        {.op = "ConstantOfShape", .since = 9, .host = host_ConstantOfShape, .host_inputs = {0}},
        {.op = "Range", .since = 11, .host = host_Range, .host_inputs = {0,1,2}},
        {.op = "EyeLike", .since = 9, .host = host_EyeLike},
    };
    return t;
}

}  // namespace onnx2ggml
