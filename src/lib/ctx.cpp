// The op library's build context, params printing and shared layout helpers.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "onnx2ggml/ops.h"

namespace o2g {

ggml_tensor* Ctx::constant(ggml_type type, const int64_t ne[4], const void* data, size_t nbytes) {
    ggml_tensor* t = ggml_new_tensor(ggml, type, 4, ne);
    if (ggml_nbytes(t) != nbytes) throw OpError("internal: constant of " + std::to_string(nbytes) + " bytes for a " +
                                                std::to_string(ggml_nbytes(t)) + "-byte tensor");
    ggml_set_input(t);
    const uint8_t* p = static_cast<const uint8_t*>(data);
    uploads.emplace_back(t, std::vector<uint8_t>(p, p + nbytes));
    return t;
}

ggml_tensor* Ctx::constant_f32(const int64_t ne[4], const std::vector<float>& v) {
    return constant(GGML_TYPE_F32, ne, v.data(), v.size() * sizeof(float));
}

ggml_tensor* Ctx::ints_tensor(const Ints& v, ggml_type type) {
    const int64_t ne[4] = {int64_t(v.size()), 1, 1, 1};
    if (type == GGML_TYPE_F32) {
        std::vector<float> f(v.begin(), v.end());
        return constant_f32(ne, f);
    }
    std::vector<int32_t> i(v.begin(), v.end());
    return constant(GGML_TYPE_I32, ne, i.data(), i.size() * 4);
}

ggml_tensor* Ctx::floats_tensor(const std::vector<double>& v) {
    const int64_t ne[4] = {int64_t(v.size()), 1, 1, 1};
    return constant_f32(ne, std::vector<float>(v.begin(), v.end()));
}

std::string float_literal(float f) {
    if (std::isnan(f)) return "NAN";
    if (std::isinf(f)) return f > 0 ? "INFINITY" : "-INFINITY";
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", double(f));
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + "f";
}

std::string ints_literal(const Ints& v) {
    std::string r = "{";
    for (size_t i = 0; i < v.size(); i++) {
        if (i) r += ", ";
        r += v[i] == INT64_MIN ? std::string("INT64_MIN") : std::to_string(v[i]);
    }
    return r + "}";
}

void FieldWriter::field(const char* name, const std::string& literal) {
    out += std::string(out.empty() ? "" : ", ") + "." + name + " = " + literal;
    items.emplace_back(name, literal);
}
void FieldWriter::operator()(const char* name, int64_t v) {
    field(name, v == INT64_MIN ? std::string("INT64_MIN") : std::to_string(v));
}
void FieldWriter::operator()(const char* name, bool v) { field(name, v ? "true" : "false"); }
void FieldWriter::operator()(const char* name, float v) { field(name, float_literal(v)); }
void FieldWriter::operator()(const char* name, const Ints& v) { field(name, ints_literal(v)); }
void FieldWriter::operator()(const char* name, const std::vector<float>& v) {
    std::string r = "{";
    for (size_t i = 0; i < v.size(); i++) r += (i ? ", " : "") + float_literal(v[i]);
    field(name, r + "}");
}

ggml_tensor* cont(Ctx& ctx, ggml_tensor* x) { return ggml_is_contiguous(x) ? x : ggml_cont(ctx, x); }

ggml_tensor* f32_cont(Ctx& ctx, ggml_tensor* x) {
    x = cont(ctx, x);
    return x->type == GGML_TYPE_F32 ? x : ggml_cast(ctx, x, GGML_TYPE_F32);
}

// ggml_cont(ggml_permute(x, ax)), or the contiguous tensor x was copied from when x = ggml_cont(ggml_permute(src,
// a)) and the two permutations compose to the identity: the copy back is not made (and the first copy is left out
// of the graph where nothing else reads it). Layout round trips (NhwcConv, Transpose, NHWC GroupNorm) cost nothing.
ggml_tensor* permute_cont(Ctx& ctx, ggml_tensor* x, const int ax[4]) {
    const ggml_tensor* p = x->op == GGML_OP_CONT ? x->src[0] : nullptr;
    if (p && p->op == GGML_OP_PERMUTE && p->src[0] && ggml_is_contiguous(p->src[0]) && p->src[0]->type == x->type) {
        const int32_t* first = reinterpret_cast<const int32_t*>(p->op_params);  // input dim i went to first[i]
        bool identity = true;
        for (int i = 0; i < 4; i++) identity &= first[i] >= 0 && first[i] < 4 && ax[first[i]] == i;
        if (identity) return p->src[0];
    }
    return ggml_cont(ctx, ggml_permute(ctx, x, ax[0], ax[1], ax[2], ax[3]));
}

ggml_tensor* nhwc_to_nchw(Ctx& ctx, ggml_tensor* x) {
    static const int axes[4] = {2, 0, 1, 3};
    return permute_cont(ctx, cont(ctx, x), axes);
}

ggml_tensor* nchw_to_nhwc(Ctx& ctx, ggml_tensor* x) {
    static const int axes[4] = {1, 2, 0, 3};
    return permute_cont(ctx, cont(ctx, x), axes);
}

int ggml_axis(int64_t axis, int rank) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) throw OpError("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    return rank - 1 - int(a);
}

bool same_ne(const ggml_tensor* a, const ggml_tensor* b) {
    for (int i = 0; i < 4; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

ggml_tensor* repeat_to(Ctx& ctx, ggml_tensor* x, const int64_t ne[4]) {
    if (x->ne[0] == ne[0] && x->ne[1] == ne[1] && x->ne[2] == ne[2] && x->ne[3] == ne[3]) return x;
    return ggml_repeat_4d(ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* reshape_ne(Ctx& ctx, ggml_tensor* x, const int64_t ne[4]) {
    if (x->ne[0] == ne[0] && x->ne[1] == ne[1] && x->ne[2] == ne[2] && x->ne[3] == ne[3]) return x;
    return ggml_reshape_4d(ctx, cont(ctx, x), ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* full_f32(Ctx& ctx, ggml_tensor* x, const int64_t ne[4]) {
    if (x->type != GGML_TYPE_F32) x = ggml_cast(ctx, x, GGML_TYPE_F32);
    return cont(ctx, repeat_to(ctx, x, ne));
}

static std::string ne_str(const int64_t ne[4]) {
    char buf[96];
    snprintf(buf, sizeof buf, "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", ne[0], ne[1], ne[2], ne[3]);
    return buf;
}

void broadcast_ne(const int64_t a[4], const int64_t b[4], int64_t ne[4]) {
    int64_t out[4];
    for (int i = 0; i < 4; i++) {
        // Modulo tiling (ggml_repeat) also covers ranks above 4 folded into the outer dim.
        int64_t x = a[i], y = b[i], hi = x > y ? x : y, lo = x > y ? y : x;
        if (lo == 0 ? hi > 1 : hi % lo != 0)
            throw OpError("ggml shapes " + ne_str(a) + " and " + ne_str(b) + " cannot be broadcast");
        out[i] = lo == 0 ? 0 : hi;
    }
    for (int i = 0; i < 4; i++) ne[i] = out[i];
}

void broadcast_ne(const ggml_tensor* a, const ggml_tensor* b, int64_t ne[4]) { broadcast_ne(a->ne, b->ne, ne); }

}  // namespace o2g
