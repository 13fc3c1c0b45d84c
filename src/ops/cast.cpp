// Element-type and pass-through ops: Cast (1-25), CastLike (15-25), BitCast (26, host), Dropout (1-22, inference).
// Casts from or to a narrow type (float8, float4e2m1, 4- and 2-bit ints) run on the host: mark_host_values
// brings their input there, and the host rounds by ONNX's rules.
#include "ops/host.h"

namespace onnx2ggml {

static DType cast_target(Lower& L) {
    if (L.node.op_type == "CastLike") return L.dtype(1);
    const Attribute* a = L.node.attr("to");
    if (!a) L.error("missing attribute 'to'");
    if (a->type == AttrType::STRING) L.error("string 'to' is not supported");
    DType to = DType(int32_t(a->i));
    if (!dtype_supported(to)) L.error(std::string("cast to ") + dtype_name(to) + " is not supported");
    return to;
}

void host_Cast(Lower& L);
void lower_Cast(Lower& L) {
    DType to = cast_target(L), from = L.dtype(0);
    // An empty host value (CastLike of a constant, next to a device tensor) has nothing for ggml to hold.
    if (L.in(0).host && (shape_numel(L.shape(0)) == 0 || dtype_is_narrow(to) || dtype_is_narrow(from)))
        return host_Cast(L);
    if (dtype_is_narrow(to) || dtype_is_narrow(from))
        L.error("a cast from or to a narrow type needs its input on the host");
    bool to_int = dtype_is_integer(to), from_int = dtype_is_integer(from);
    // Integers are I32 on the device and every float or bool F32: only these changes move data.
    int kind = -1;
    if (to_int && !from_int) kind = o2g::CAST_INT;
    else if (!to_int && from_int) kind = o2g::CAST_FLOAT;
    else if (to == DType::BOOL && from != DType::BOOL) kind = o2g::CAST_BOOL;
    else if (to == DType::FLOAT16 && from != DType::FLOAT16) kind = o2g::CAST_FLOAT16;
    else if (to == DType::BFLOAT16 && from != DType::BFLOAT16) kind = o2g::CAST_BFLOAT16;
    ggml_tensor* x = L.t(0);
    if (kind >= 0) x = O2G_CALL(L, o2g::cast, x, o2g::CastParams{kind});
    L.out_shape(0, x, to, L.shape(0));
}
void host_Cast(Lower& L) {
    bool saturate = L.node.get_int("saturate", 1) != 0;
    std::string mode = L.node.has("round_mode") ? L.node.attr("round_mode")->s : "up";
    if (mode != "up" && mode != "down" && mode != "nearest")
        L.error("round_mode '" + mode + "' is not up, down or nearest");
    int64_t round = mode == "nearest" ? E8M0_NEAREST : mode == "down" ? E8M0_DOWN : E8M0_UP;
    O2G_HOST(L, 0, o2g::host_cast, L.hv(0), cast_target(L), saturate, round);
}

void host_BitCast(Lower& L) { O2G_HOST(L, 0, o2g::host_bitcast, L.hv(0), DType(L.node.get_int("to", 0))); }

// Inference: the data passes through and the optional mask is all true.
void lower_Dropout(Lower& L) {
    L.pass(0, 0);
    if (L.outs.size() > 1 && !L.node.outputs[1].empty()) {
        const HostTensor yes = HostTensor::from_i64(DType::BOOL, {1}, {1});
        O2G_HOST(L, 1, o2g::host_constant_of_shape, L.shape_sym(0), HostArg{&yes, nullptr});
    }
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& cast_ops() {
    static const std::vector<OpDef> t = {
        {.op = "BitCast", .since = 26, .accepts = "in=1 out=1", .host = host_BitCast, .host_inputs = {0}},
        {.op = "Cast", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Cast, .host = host_Cast},
        {.op = "CastLike", .since = 15, .accepts = "in=2 out=1", .ggml = lower_Cast, .host = host_Cast},
        {.op = "Dropout", .since = 1, .accepts = "in=1..3 out=1..2", .ggml = lower_Dropout, .host = lower_Dropout},
    };
    return t;
}

}  // namespace onnx2ggml
