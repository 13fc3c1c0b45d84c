// Op library: tensor movement (see include/onnx2ggml/ops/movement.h).
#include <algorithm>
#include <string>

#include "kernels/concat.h"
#include "kernels/custom.h"
#include "lib/index_maps.h"
#include "lib/portable.h"
#include "lib/row_gather.h"

namespace o2g {

namespace {

std::string ints_str(const Ints& v) { return ints_literal(v); }

ggml_tensor* view_dim(Ctx& ctx, ggml_tensor* x, int g, int64_t first, int64_t count) {
    x = cont(ctx, x);
    int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    ne[g] = count;
    ggml_tensor* v = ggml_view_4d(ctx, x, ne[0], ne[1], ne[2], ne[3], x->nb[1], x->nb[2], x->nb[3],
                                  size_t(first) * x->nb[g]);
    return ggml_cont(ctx, v);
}

void check_dim(int g, const char* op) {
    if (g < 0 || g > 3) throw OpError(std::string(op) + ": ggml dim " + std::to_string(g) + " out of range");
}

}  // namespace

// ---- reshapes ----

ggml_tensor* reshape(Ctx& ctx, ggml_tensor* x, const Ints& shape, const ReshapeParams& p) {
    Ints s = shape;
    int64_t known = 1;
    int neg = -1;
    for (size_t i = 0; i < s.size(); i++) {
        if (s[i] == 0 && !p.allowzero) {
            int g = p.rank - 1 - int(i);
            if (int(i) >= p.rank) throw OpError("Reshape: 0 at position " + std::to_string(i) + " beyond input rank");
            if (g >= 3 && p.rank > 4)
                throw OpError("Reshape: 0 at position " + std::to_string(i) + " copies a folded dim (rank > 4)");
            s[i] = x->ne[g];
        }
        if (s[i] == -1) {
            if (neg >= 0) throw OpError("Reshape: more than one -1 in shape");
            neg = int(i);
        } else if (s[i] < 0) {
            throw OpError("Reshape: invalid dim " + std::to_string(s[i]));
        } else {
            known *= s[i];
        }
    }
    int64_t total = ggml_nelements(x);
    if (neg >= 0) {
        if (known == 0 || total % known) throw OpError("Reshape: cannot infer -1 in " + ints_str(shape));
        s[size_t(neg)] = total / known;
    } else if (known != total) {
        throw OpError("Reshape: cannot reshape " + std::to_string(total) + " elements to " + ints_str(s));
    }
    int64_t ne[4];
    fold_ne(s, ne);
    return reshape_ne(ctx, x, ne);
}

ggml_tensor* reshape_as(Ctx& ctx, ggml_tensor* x, const Ints& in, const Ints& shape, const ReshapeParams& p) {
    int64_t n = 1;
    for (int64_t d : in) n *= d;
    if (int64_t(in.size()) != p.rank || n != ggml_nelements(x))
        throw OpError("Reshape: input shape " + ints_str(in) + " does not match the tensor's " +
                      std::to_string(ggml_nelements(x)) + " elements");
    return reshape(ctx, x, reshape_target(in, shape, p.allowzero), ReshapeParams{p.rank, true});
}

ggml_tensor* flatten(Ctx& ctx, ggml_tensor* x, const FlattenParams& p) {
    if (p.dim < 0 || p.dim > 4) throw OpError("Flatten: dim " + std::to_string(p.dim) + " out of range");
    int64_t inner = 1;
    for (int d = 0; d < p.dim; d++) inner *= x->ne[d];
    const int64_t ne[4] = {inner, inner ? ggml_nelements(x) / inner : 0, 1, 1};
    return reshape_ne(ctx, x, ne);
}

Ints squeeze_shape(const Ints& xs, const Ints& axes) {
    const int rank = int(xs.size());
    std::vector<bool> drop(xs.size(), axes.empty());  // no axes: every dim of size 1
    for (int64_t a : axes) {
        int i = rank - 1 - ggml_axis(a, rank);
        if (xs[size_t(i)] != 1)
            throw OpError("Squeeze: axis " + std::to_string(a) + " has size " + std::to_string(xs[size_t(i)]));
        drop[size_t(i)] = true;
    }
    Ints s;
    for (size_t i = 0; i < xs.size(); i++)
        if (!drop[i] || xs[i] != 1) s.push_back(xs[i]);
    return s;
}

ggml_tensor* squeeze_as(Ctx& ctx, ggml_tensor* x, const Ints& shape, const Ints& axes) {
    int64_t ne[4];
    fold_ne(squeeze_shape(shape, axes), ne);
    return reshape_ne(ctx, x, ne);
}

ggml_tensor* squeeze(Ctx& ctx, ggml_tensor* x, const Ints& axes, const SqueezeParams& p) {
    return squeeze_as(ctx, x, onnx_shape(x, p.rank, "Squeeze"), axes);
}

Ints unsqueeze_shape(const Ints& shape, const Ints& axes) {
    int r = int(shape.size() + axes.size());
    std::vector<bool> ins(size_t(r), false);
    for (int64_t a : axes) {
        int i = r - 1 - ggml_axis(a, r);
        if (ins[size_t(i)]) throw OpError("Unsqueeze: repeated axis " + std::to_string(a));
        ins[size_t(i)] = true;
    }
    Ints s;
    size_t j = 0;
    for (int i = 0; i < r; i++) s.push_back(ins[size_t(i)] ? 1 : shape[j++]);
    return s;
}

ggml_tensor* unsqueeze(Ctx& ctx, ggml_tensor* x, const Ints& axes, const UnsqueezeParams& p) {
    int64_t ne[4];
    fold_ne(unsqueeze_shape(onnx_shape(x, p.rank, "Unsqueeze"), axes), ne);
    return reshape_ne(ctx, x, ne);
}

// ---- layout changes ----

Ints ggml_perm(const Ints& onnx_perm) {
    int r = int(onnx_perm.size());
    Ints g(static_cast<size_t>(r));
    for (int i = 0; i < r; i++) g[size_t(r - 1 - i)] = r - 1 - onnx_perm[size_t(i)];
    return g;
}

ggml_tensor* transpose(Ctx& ctx, ggml_tensor* x, const TransposeParams& p) {
    if (p.perm.size() > 4) throw OpError("Transpose: rank " + std::to_string(p.perm.size()) + " (ggml holds 4 dims)");
    int ax[4] = {-1, -1, -1, -1};
    bool identity = true;
    for (int d = 0; d < 4; d++) {
        int64_t s = d < int(p.perm.size()) ? p.perm[size_t(d)] : d;
        if (s < 0 || s > 3 || ax[s] >= 0) throw OpError("Transpose: perm " + ints_str(p.perm) + " is not a permutation");
        ax[s] = d;  // input dim s goes to output dim d
        identity &= s == d;
    }
    if (identity) return cont(ctx, x);
    return permute_cont(ctx, x, ax);  // a Transpose that undoes the one before it is no copy
}

ggml_tensor* concat(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const ConcatParams& p) {
    check_dim(p.axis, "Concat");
    if (a->type != b->type)
        throw OpError(std::string("Concat: inputs of ggml types ") + ggml_type_name(a->type) + " and " +
                      ggml_type_name(b->type));
    for (int d = 0; d < 4; d++)
        if (d != p.axis && a->ne[d] != b->ne[d])
            throw OpError("Concat: inputs differ in ggml dim " + std::to_string(d) + " (" + std::to_string(a->ne[d]) +
                          " vs " + std::to_string(b->ne[d]) + ")");
    if (ctx.cpu && ggml_blck_size(a->type) == 1) return concat_blocks(ctx, a, b, p.axis);
    return ggml_concat(ctx, a, b, p.axis);
}

ggml_tensor* stack(Ctx& ctx, const std::vector<ggml_tensor*>& items, const StackParams& p) {
    if (items.empty()) throw OpError("cannot stack zero iterations");
    if (p.rank >= 4) throw OpError("Stack: items of rank " + std::to_string(p.rank) + " (ggml holds 4 dims)");
    ggml_tensor* y = nullptr;
    for (ggml_tensor* x : items) {
        ggml_tensor* u = unsqueeze(ctx, x, {0}, {p.rank});
        y = y ? concat(ctx, y, u, {p.rank}) : u;
    }
    return y;
}

ggml_tensor* split(Ctx& ctx, ggml_tensor* x, const Ints& split, const SplitParams& p) {
    check_dim(p.axis, "Split");
    int64_t n = x->ne[p.axis];
    Ints sizes = split;
    if (sizes.empty()) {
        if (p.num_outputs < 1) throw OpError("Split: num_outputs must be positive");
        int64_t chunk = (n + p.num_outputs - 1) / p.num_outputs;
        for (int i = 0; i < p.num_outputs; i++) sizes.push_back(std::min(chunk, n - chunk * i));
    }
    if (p.index < 0 || p.index >= int(sizes.size()))
        throw OpError("Split: part " + std::to_string(p.index) + " of " + std::to_string(sizes.size()));
    int64_t off = 0;
    for (int i = 0; i < p.index; i++) off += sizes[size_t(i)];
    int64_t len = sizes[size_t(p.index)];
    if (len < 0 || off + len > n)
        throw OpError("Split: sizes " + ints_str(sizes) + " do not fit a dim of " + std::to_string(n));
    return view_dim(ctx, x, p.axis, off, len);
}

void slice_range(int64_t dim, int64_t st, int64_t en, int64_t step, int64_t& first, int64_t& count) {
    if (step == 0) throw OpError("Slice: step is 0");
    if (st < 0) st += dim;
    if (en < 0) en += dim;
    if (step > 0) {
        st = std::clamp<int64_t>(st, 0, dim);
        en = std::clamp<int64_t>(en, 0, dim);
        count = std::max<int64_t>(0, (en - st + step - 1) / step);
    } else {
        st = std::clamp<int64_t>(st, 0, dim - 1);
        en = std::clamp<int64_t>(en, -1, dim - 1);
        count = std::max<int64_t>(0, (st - en + (-step) - 1) / (-step));
    }
    first = st;
}

ggml_tensor* slice(Ctx& ctx, ggml_tensor* x, const Ints& starts, const Ints& ends, const Ints& axes_in,
                   const Ints& steps, const SliceParams& p) {
    size_t n = starts.size();
    if (p.rank > 4) throw OpError("Slice: rank " + std::to_string(p.rank) + " (ggml holds 4 dims)");
    Ints axes = axes_in;
    if (axes.empty())
        for (size_t i = 0; i < n; i++) axes.push_back(int64_t(i));
    if (ends.size() != n || axes.size() != n || (!steps.empty() && steps.size() != n))
        throw OpError("Slice: starts, ends, axes and steps differ in length");
    // Empty at these bounds: a tensor with a 0 in ne, never computed (an output of it is returned empty).
    int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    for (size_t i = 0; i < n; i++) {
        const int g = ggml_axis(axes[i], p.rank);
        int64_t first;
        slice_range(x->ne[g], starts[i], ends[i], steps.empty() ? 1 : steps[i], first, ne[g]);
    }
    if (ne[0] * ne[1] * ne[2] * ne[3] == 0) return ggml_new_tensor(ctx, x->type, 4, ne);
    for (size_t i = 0; i < n; i++) {
        const int g = ggml_axis(axes[i], p.rank);
        int64_t step = steps.empty() ? 1 : steps[i], first, count;
        slice_range(x->ne[g], starts[i], ends[i], step, first, count);
        if (step == 1) {
            x = view_dim(ctx, x, g, first, count);
        } else {
            Ints idx;
            for (int64_t k = 0; k < count; k++) idx.push_back(first + k * step);
            x = gather_dim(ctx, x, g, idx);
        }
    }
    return x;
}

ggml_tensor* expand(Ctx& ctx, ggml_tensor* x, const Ints& shape, const ExpandParams& p) {
    int k = int(shape.size()), R = std::max(p.rank, k);
    int64_t ne[4];
    if (R <= 4) {
        for (int g = 0; g < 4; g++) {
            int64_t s = g < k ? shape[size_t(k - 1 - g)] : 1, d = x->ne[g];
            if (s != 1 && d != 1 && s != d)
                throw OpError("Expand: input dim " + std::to_string(d) + " cannot broadcast to " + std::to_string(s));
            ne[g] = s == 1 ? d : s;
        }
    } else {  // folded: `shape` must name every output dim
        int64_t sn[4];
        fold_ne(shape, sn);
        broadcast_ne(x->ne, sn, ne);
    }
    return repeat_to(ctx, x, ne);
}

ggml_tensor* tile(Ctx& ctx, ggml_tensor* x, const Ints& repeats) {
    int r = int(repeats.size());
    int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    for (int a = 0; a < r; a++) {
        if (repeats[size_t(a)] < 0) throw OpError("Tile: negative repeat " + std::to_string(repeats[size_t(a)]));
        ne[std::min(r - 1 - a, 3)] *= repeats[size_t(a)];
    }
    return ggml_repeat_4d(ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* pad(Ctx& ctx, ggml_tensor* x, const Ints& pads, const Ints& axes_in, const PadParams& p) {
    int r = p.rank;
    if (r > 4) throw OpError("Pad: rank " + std::to_string(r) + " (ggml holds 4 dims)");
    Ints axes = axes_in;
    if (axes.empty())
        for (int a = 0; a < r; a++) axes.push_back(a);
    if (pads.size() != axes.size() * 2)
        throw OpError("Pad: " + std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
    int64_t b[4] = {0, 0, 0, 0}, e[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < axes.size(); i++) {
        const int g = ggml_axis(axes[i], r);
        b[g] = pads[i];
        e[g] = pads[i + axes.size()];
    }
    for (int g = 0; g < 4; g++) {  // ggml's pad amounts are int
        if (std::abs(std::clamp<int64_t>(b[g], -INT64_MAX, INT64_MAX)) > INT32_MAX ||
            std::abs(std::clamp<int64_t>(e[g], -INT64_MAX, INT64_MAX)) > INT32_MAX)
            throw OpError("Pad: pads " + ints_literal(pads) + " exceed ggml's 32-bit pad amounts");
        if (x->ne[g] + b[g] + e[g] < 0)
            throw OpError("Pad: pads " + ints_literal(pads) + " crop more than a dim of " +
                          std::to_string(x->ne[g]) + " holds");
    }
    if (p.mode == PAD_CONSTANT) {
        // Crop negative pads first, then pad positive ones with zeros, shifted by the value.
        for (int g = r - 1; g >= 0; g--) {
            if (b[g] >= 0 && e[g] >= 0) continue;
            int64_t lo = std::max<int64_t>(0, -b[g]), hi = std::max<int64_t>(0, -e[g]);
            Ints idx;
            for (int64_t k = lo; k < x->ne[g] - hi; k++) idx.push_back(k);
            x = gather_dim(ctx, x, g, idx);
        }
        int lp[4], rp[4];
        for (int g = 0; g < 4; g++) {
            lp[g] = int(std::max<int64_t>(0, b[g]));
            rp[g] = int(std::max<int64_t>(0, e[g]));
        }
        if (p.value != 0) x = ggml_scale_bias(ctx, x, 1.0f, -p.value);
        x = ggml_pad_ext(ctx, x, lp[0], rp[0], lp[1], rp[1], lp[2], rp[2], lp[3], rp[3]);
        if (p.value != 0) x = ggml_scale_bias(ctx, x, 1.0f, p.value);
        return x;
    }
    if (p.mode < 0 || p.mode > PAD_WRAP) throw OpError("Pad: unknown mode " + std::to_string(p.mode));
    for (int g = r - 1; g >= 0; g--) {
        if (b[g] == 0 && e[g] == 0) continue;
        int64_t n = x->ne[g];
        if (n == 0) throw OpError("Pad: cannot pad an empty dim in this mode");
        // Its index table is made on the host, an entry per output element of the dim (fuzz: 67M reflected rows).
        if (n + b[g] + e[g] > (int64_t(1) << 24))
            throw OpError("Pad: pads " + ints_literal(pads) + " make a dim of " + std::to_string(n + b[g] + e[g]) +
                          ", above the 2^24 this mode's index table holds");
        Ints idx;
        for (int64_t o = -b[g]; o < n + e[g]; o++) idx.push_back(pad_source(p.mode, o, n));
        x = gather_dim(ctx, x, g, idx);
    }
    return x;
}

namespace {
ggml_tensor* take(Ctx& ctx, ggml_tensor* x, const RowMap& m, const char* op) {
    if (prod(m.os) == 0) throw OpError(std::string(op) + ": the output would be empty, which ggml cannot hold");
    int64_t ne[4];
    fold_ne(m.os, ne);
    return take_rows(ctx, x, m.inner, m.rows, ne);
}
}  // namespace

ggml_tensor* center_crop_pad(Ctx& ctx, ggml_tensor* x, const Ints& shape, const CenterCropPadParams& p) {
    Ints axes;
    for (int64_t g : p.axes) axes.push_back(p.rank - 1 - g);
    RowMap m = center_crop_pad_rows(onnx_shape(x, p.rank, "CenterCropPad"), shape, axes);
    return m.rows.empty() ? x : take(ctx, x, m, "CenterCropPad");
}

ggml_tensor* reverse_sequence(Ctx& ctx, ggml_tensor* x, const Ints& lens, const ReverseSequenceParams& p) {
    return take(ctx, x, reverse_sequence_rows(onnx_shape(x, p.rank, "ReverseSequence"), lens, p.batch_major),
                "ReverseSequence");
}

// ---- element types ----

ggml_tensor* cast(Ctx& ctx, ggml_tensor* x, const CastParams& p) {
    bool from_int = x->type == GGML_TYPE_I32;
    switch (p.to) {
        case CAST_INT:
            return from_int ? x : ggml_cast(ctx, ggml_trunc(ctx, x), GGML_TYPE_I32);
        case CAST_FLOAT:
            return from_int || x->type != GGML_TYPE_F32 ? ggml_cast(ctx, x, GGML_TYPE_F32) : x;
        case CAST_BOOL:
            if (from_int) return ggml_cast(ctx, x, GGML_TYPE_F32);
            if (ctx.cpu) return custom_unary(ctx, custom_unary(ctx, x, UnaryK::Not), UnaryK::Not);
            return ggml_step(ctx, ggml_abs(ctx, x));  // x != 0 (NaN gives 0 here)
        case CAST_FLOAT16:
        case CAST_BFLOAT16:
            if (from_int) return ggml_cast(ctx, x, GGML_TYPE_F32);
            return ggml_cast(ctx, ggml_cast(ctx, x, p.to == CAST_FLOAT16 ? GGML_TYPE_F16 : GGML_TYPE_BF16),
                             GGML_TYPE_F32);
    }
    throw OpError("Cast: unknown target " + std::to_string(p.to));
}

// ---- block rearrangements: a gather of single elements through an index map ----

ggml_tensor* depth_to_space(Ctx& ctx, ggml_tensor* x, const DepthToSpaceParams& p) {
    RowMap m = depth_to_space_map(onnx_shape(x, 4, "DepthToSpace"), p.blocksize, p.crd, true);
    int64_t ne[4];
    fold_ne(m.os, ne);
    return take_rows(ctx, x, 1, m.rows, ne);
}

ggml_tensor* space_to_depth(Ctx& ctx, ggml_tensor* x, const SpaceToDepthParams& p) {
    RowMap m = depth_to_space_map(onnx_shape(x, 4, "SpaceToDepth"), p.blocksize, p.crd, false);
    int64_t ne[4];
    fold_ne(m.os, ne);
    return take_rows(ctx, x, 1, m.rows, ne);
}

}  // namespace o2g
