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
    const Attribute* a = L.node.attr("value");
    HostTensor value = HostTensor::alloc(DType::FLOAT, {1});  // float 0 unless given
    if (a && a->t) {
        if (!dtype_supported(a->t->dtype)) L.error("unsupported value type");
        if (a->t->nbytes < dtype_size(a->t->dtype)) L.error("'value' holds no element");
        value = HostTensor::alloc(a->t->dtype, {1});
        std::memcpy(value.mut(), a->t->data, dtype_size(a->t->dtype));
    }
    O2G_HOST(L, 0, o2g::host_constant_of_shape, L.sym(0), HostArg{&value, nullptr});
}

void host_Range(Lower& L) { O2G_HOST(L, 0, o2g::host_range, L.hv(0), L.hv(1), L.hv(2)); }

void host_EyeLike(Lower& L) {
    DType dt = L.node.has("dtype") ? DType(int32_t(L.node.get_int("dtype", 1))) : L.dtype(0);
    O2G_HOST(L, 0, o2g::host_eye_like, L.shape_sym(0), dt, L.node.get_int("k", 0));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& constants_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Constant", .since = 1, .accepts = "in=0 out=1", .host = host_Constant},
        {.op = "ConstantOfShape", .since = 9, .accepts = "in=1 out=1",
         .host = host_ConstantOfShape, .host_inputs = {0}},
        {.op = "Range", .since = 11, .accepts = "in=3 out=1", .host = host_Range, .host_inputs = {0,1,2}},
        {.op = "EyeLike", .since = 9, .accepts = "in=1 out=1", .host = host_EyeLike},
    };
    return t;
}

}  // namespace onnx2ggml
