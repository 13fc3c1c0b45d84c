// Host functions (onnx2ggml/ops/host.h): reshapes, data movement and indexing of host tensors.
#include <algorithm>
#include <cstring>

#include "lib/host_util.h"
#include "lib/index_maps.h"
#include "onnx2ggml/ops.h"

namespace o2g {

using onnx2ggml::broadcast_index;
using onnx2ggml::check_host_size;
using onnx2ggml::dtype_size;
using onnx2ggml::host_axis;
using onnx2ggml::host_gather_flat;
using onnx2ggml::shape_numel;
using onnx2ggml::shape_str;
using onnx2ggml::strides_of;

namespace {

// Element k of the output (shape os) is element src(dim, coordinate) of x, coordinates combined by x's strides.
template <typename F>
HostTensor remap(const HostTensor& x, const Shape& os, F src) {
    check_host_size(os, std::max<size_t>(sizeof(int64_t), dtype_size(x.dtype)), "output");
    auto ist = strides_of(x.shape);
    std::vector<int64_t> map(size_t(shape_numel(os)));
    std::vector<int64_t> c(os.size(), 0);
    for (size_t k = 0; k < map.size(); k++) {
        int64_t off = 0;
        for (size_t d = 0; d < os.size(); d++) off += src(d, c[d]) * ist[d];
        map[k] = off;
        for (int d = int(os.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    return host_gather_flat(x, os, map);
}

}  // namespace

Shape reshape_target(const Shape& in, const Ints& spec_in, bool allowzero) {
    Shape spec = spec_in;
    int64_t known = 1;
    int neg = -1;
    for (size_t i = 0; i < spec.size(); i++) {
        if (spec[i] == 0 && !allowzero) {
            if (i >= in.size()) throw OpError("Reshape: 0 at position " + std::to_string(i) + " beyond input rank");
            spec[i] = in[i];
        }
        if (spec[i] == -1) {
            if (neg >= 0) throw OpError("Reshape: more than one -1 in shape");
            neg = int(i);
        } else if (spec[i] < 0) {
            throw OpError("Reshape: invalid dim " + std::to_string(spec[i]));
        } else if (__builtin_mul_overflow(known, spec[i], &known)) {  // found by tests/fuzz (UBSan)
            throw OpError("Reshape: the target shape " + shape_str(spec_in) + " has more elements than int64 holds");
        }
    }
    int64_t total = shape_numel(in);
    if (neg >= 0) {
        if (known == 0 || total % known) throw OpError("Reshape: cannot infer -1 for " + shape_str(in));
        spec[size_t(neg)] = total / known;
    } else if (known != total) throw OpError("Reshape: cannot reshape " + shape_str(in) + " to " + shape_str(spec));
    return spec;
}

HostTensor host_reshape(const HostTensor& x, const Ints& shape, const HostReshapeParams& p) {
    return x.reshaped(reshape_target(x.shape, shape, p.allowzero));
}

HostTensor host_flatten(const HostTensor& x, int64_t axis) {
    int64_t r = int64_t(x.shape.size());
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) throw OpError("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
    int64_t a = 1;
    for (int64_t i = 0; i < axis; i++) a *= x.shape[size_t(i)];
    return x.reshaped({a, a == 0 ? 0 : x.numel() / a});
}

HostTensor host_squeeze(const HostTensor& x, const Ints& axes) {
    const Shape& in = x.shape;
    std::vector<bool> drop(in.size(), false);
    if (axes.empty())
        for (size_t i = 0; i < in.size(); i++) drop[i] = in[i] == 1;
    for (int64_t a : axes) {
        int64_t ax = host_axis(a, int64_t(in.size()), "Squeeze axis");
        if (in[size_t(ax)] != 1) throw OpError("Squeeze: dim " + std::to_string(ax) + " is not 1");
        drop[size_t(ax)] = true;
    }
    Shape s;
    for (size_t i = 0; i < in.size(); i++)
        if (!drop[i]) s.push_back(in[i]);
    return x.reshaped(s);
}

HostTensor host_unsqueeze(const HostTensor& x, const Ints& axes) { return x.reshaped(unsqueeze_shape(x.shape, axes)); }

HostTensor host_transpose(const HostTensor& x, const Ints& perm_in) {
    int64_t r = int64_t(x.shape.size());
    Ints perm = perm_in;
    if (perm.empty())
        for (int64_t i = r - 1; i >= 0; i--) perm.push_back(i);
    if (int64_t(perm.size()) != r)
        throw OpError("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
    for (auto& p : perm) p = host_axis(p, r, "perm entry");
    Shape os;
    for (auto p : perm) os.push_back(x.shape[size_t(p)]);
    check_host_size(os, std::max<size_t>(sizeof(int64_t), dtype_size(x.dtype)), "output");
    auto ist = strides_of(x.shape);
    std::vector<int64_t> map(size_t(shape_numel(os))), c(os.size(), 0);
    for (size_t k = 0; k < map.size(); k++) {
        int64_t off = 0;
        for (size_t d = 0; d < os.size(); d++) off += c[d] * ist[size_t(perm[d])];
        map[k] = off;
        for (int d = int(os.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    return host_gather_flat(x, os, map);
}

HostTensor host_concat(const std::vector<HostTensor>& xs, int64_t axis_in) {
    if (xs.empty()) throw OpError("Concat needs an input");
    int64_t r = int64_t(xs[0].shape.size());
    if (r == 0) throw OpError("Concat of scalars (inputs must have rank >= 1)");
    int64_t axis = host_axis(axis_in, r, "Concat axis");
    Shape os = xs[0].shape;
    os[size_t(axis)] = 0;
    for (const HostTensor& x : xs) {
        if (int64_t(x.shape.size()) != r) throw OpError("Concat inputs differ in rank");
        for (int64_t d = 0; d < r; d++)
            if (d != axis && x.shape[size_t(d)] != xs[0].shape[size_t(d)])
                throw OpError("Concat inputs " + shape_str(xs[0].shape) + " and " + shape_str(x.shape) + " differ");
        os[size_t(axis)] += x.shape[size_t(axis)];
    }
    HostTensor out = HostTensor::alloc(xs[0].dtype, os);
    size_t es = dtype_size(out.dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; i++) outer *= os[size_t(i)];
    for (int64_t i = axis + 1; i < r; i++) inner *= os[size_t(i)];
    int64_t off = 0;
    for (const HostTensor& x0 : xs) {
        HostTensor x = x0.cast(out.dtype);
        int64_t a = x.shape[size_t(axis)];
        for (int64_t o = 0; o < outer; o++)
            std::memcpy(out.mut() + size_t((o * os[size_t(axis)] + off) * inner) * es,
                        x.data + size_t(o * a * inner) * es, size_t(a * inner) * es);
        off += a;
    }
    return out;
}

namespace {

// The output shape of ONNX Slice on a tensor of shape `in`, and the first index and step along each dim.
Shape slice_plan(const Shape& in, const Ints& starts, const Ints& ends, const Ints& axes_in, const Ints& steps,
                 Ints& first, Ints& step) {
    int64_t r = int64_t(in.size());
    size_t n = starts.size();
    Ints axes = axes_in;
    if (axes.empty())
        for (size_t i = 0; i < n; i++) axes.push_back(int64_t(i));
    if (ends.size() != n || axes.size() != n || (!steps.empty() && steps.size() != n))
        throw OpError("starts, ends, axes and steps differ in length");
    Shape os = in;
    first.assign(os.size(), 0);
    step.assign(os.size(), 1);
    for (size_t i = 0; i < n; i++) {
        size_t ax = size_t(host_axis(axes[i], r, "Slice axis"));
        int64_t st = steps.empty() ? 1 : steps[i], count;
        if (st == 0) throw OpError("slice step is 0");
        slice_range(os[ax], starts[i], ends[i], st, first[ax], count);
        os[ax] = count;
        step[ax] = st;
    }
    return os;
}

}  // namespace

HostTensor host_slice(const HostTensor& x, const Ints& starts, const Ints& ends, const Ints& axes,
                      const Ints& steps) {
    Ints first, step;
    Shape os = slice_plan(x.shape, starts, ends, axes, steps, first, step);
    return remap(x, os, [&](size_t d, int64_t c) { return first[d] + c * step[d]; });
}

HostTensor host_slice_empty(const Ints& shape, DType type, const Ints& starts, const Ints& ends, const Ints& axes,
                            const Ints& steps) {
    Ints first, step;
    Shape os = slice_plan(shape, starts, ends, axes, steps, first, step);
    if (shape_numel(os) != 0)
        throw OpError("Slice of " + shape_str(shape) + " to " + shape_str(os) + " is not empty (it needs the data)");
    return HostTensor::alloc(type, os);
}

HostTensor host_split(const HostTensor& x, const Ints& sizes_in, const HostSplitParams& p) {
    int64_t r = int64_t(x.shape.size());
    int64_t axis = host_axis(p.axis, r, "Split axis"), A = x.shape[size_t(axis)];
    Ints sizes = sizes_in;
    if (sizes.empty()) {
        if (p.parts < 1) throw OpError("Split into " + std::to_string(p.parts) + " parts");
        int64_t chunk = (A + p.parts - 1) / p.parts;
        for (int i = 0; i < p.parts; i++) sizes.push_back(std::max<int64_t>(0, std::min(chunk, A - chunk * i)));
    }
    if (p.index < 0 || size_t(p.index) >= sizes.size()) throw OpError("Split part " + std::to_string(p.index) + " of " + std::to_string(sizes.size()));
    int64_t off = 0, total = 0;
    for (size_t i = 0; i < sizes.size(); i++) {
        if (sizes[i] < 0) throw OpError("negative Split size " + std::to_string(sizes[i]));
        if (int(i) < p.index) off += sizes[i];
        total += sizes[i];
    }
    if (total != A) throw OpError("Split sizes add up to " + std::to_string(total) + ", the axis has " + std::to_string(A));
    return host_slice(x, {off}, {off + sizes[size_t(p.index)]}, {axis}, {});
}

HostTensor host_expand(const HostTensor& x, const Ints& shape) {
    Shape os = broadcast_shape(x.shape, shape);
    check_host_size(os, std::max<size_t>(sizeof(int64_t), dtype_size(x.dtype)), "output");
    return host_gather_flat(x, os, broadcast_index(x.shape, os));
}

HostTensor host_tile(const HostTensor& x, const Ints& repeats) {
    Shape os = x.shape;
    if (repeats.size() != os.size())
        throw OpError("repeats has " + std::to_string(repeats.size()) + " entries for rank " + std::to_string(os.size()));
    for (size_t i = 0; i < os.size(); i++) {
        if (repeats[i] < 0) throw OpError("negative repeat " + std::to_string(repeats[i]));
        if (__builtin_mul_overflow(os[i], repeats[i], &os[i]))
            throw OpError("repeats " + shape_str(repeats) + " of a " + shape_str(x.shape) + " input overflow 64 bits");
    }
    return remap(x, os, [&](size_t d, int64_t c) { return c % x.shape[d]; });
}

HostTensor host_stack(const std::vector<HostTensor>& items) {
    if (items.empty()) throw OpError("cannot stack zero iterations");
    std::vector<HostTensor> parts;
    for (const HostTensor& x : items) parts.push_back(host_unsqueeze(x, {0}));
    return host_concat(parts, 0);
}

HostTensor host_pad(const HostTensor& x, const Ints& pads, const Ints& axes_in, const HostTensor& value, int mode) {
    size_t r = x.shape.size();
    Ints axes = axes_in;
    if (axes.empty())
        for (size_t i = 0; i < r; i++) axes.push_back(int64_t(i));
    size_t n = axes.size();
    if (pads.size() != 2 * n) throw OpError(std::to_string(pads.size()) + " pads for " + std::to_string(n) + " axes");
    if (mode < PAD_CONSTANT || mode > PAD_WRAP) throw OpError("unknown Pad mode " + std::to_string(mode));
    Ints begin(r, 0), end(r, 0);
    for (size_t i = 0; i < n; i++) {
        size_t ax = size_t(host_axis(axes[i], int64_t(r), "Pad axis"));
        begin[ax] = pads[i];
        end[ax] = pads[i + n];
    }
    Shape os = x.shape;
    for (size_t d = 0; d < r; d++) {
        int64_t grow = 0;
        if (__builtin_add_overflow(begin[d], end[d], &grow) || __builtin_add_overflow(os[d], grow, &os[d]))
            throw OpError("Pad of " + shape_str(x.shape) + ": pads " + shape_str(pads) + " overflow 64 bits");
        if (os[d] < 0) throw OpError("Pad of " + shape_str(x.shape) + ": pads crop more than a dim holds");
        if (os[d] > 0 && x.shape[d] == 0 && mode != PAD_CONSTANT) throw OpError("cannot pad an empty dim in this mode");
    }
    const double fill = value.numel() ? value.f64(0) : 0.0;
    HostTensor out = HostTensor::alloc(x.dtype, os);
    auto ist = strides_of(x.shape);
    Ints c(r, 0);
    size_t es = dtype_size(x.dtype);
    for (int64_t k = 0; k < out.numel(); k++) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < r; d++) {
            int64_t src = pad_source(mode, c[d] - begin[d], x.shape[d]);
            if (src < 0) inside = false;
            else off += src * ist[d];
        }
        if (inside) std::memcpy(out.mut() + size_t(k) * es, x.data + size_t(off) * es, es);
        else out.set_f64(k, fill);
        for (int d = int(r) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < os[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    return out;
}

HostTensor host_gather(const HostTensor& x, const HostTensor& indices, int64_t axis_in) {
    const Shape& s = x.shape;
    int64_t r = int64_t(s.size());
    if (r == 0) throw OpError("Gather: data is a scalar (it must have rank >= 1)");
    int64_t axis = host_axis(axis_in, r, "Gather axis");
    Shape os(s.begin(), s.begin() + axis);
    os.insert(os.end(), indices.shape.begin(), indices.shape.end());
    os.insert(os.end(), s.begin() + axis + 1, s.end());
    int64_t outer = 1, inner = 1, A = s[size_t(axis)];
    for (int64_t i = 0; i < axis; i++) outer *= s[size_t(i)];
    for (int64_t i = axis + 1; i < r; i++) inner *= s[size_t(i)];
    auto idx = indices.to_i64();
    check_host_size(os, std::max<size_t>(sizeof(int64_t), dtype_size(x.dtype)), "output");
    std::vector<int64_t> map;
    map.reserve(size_t(outer) * idx.size() * size_t(inner));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j : idx) {
            if (j < -A || j >= A) throw OpError("Gather index " + std::to_string(j) + " out of range for a dim of " + std::to_string(A));
            if (j < 0) j += A;
            for (int64_t k = 0; k < inner; k++) map.push_back((o * A + j) * inner + k);
        }
    return host_gather_flat(x, os, map);
}

HostTensor host_trilu(const HostTensor& x, const Ints& ks, const HostTriluParams& p) {
    if (x.shape.size() < 2) throw OpError("Trilu needs rank >= 2");
    if (ks.size() > 1) throw OpError("Trilu's k must hold one value");
    int64_t k = ks.empty() ? 0 : ks[0];
    int64_t R = x.shape[x.shape.size() - 2], C = x.shape.back();
    HostTensor out = HostTensor::alloc(x.dtype, x.shape);
    size_t es = dtype_size(x.dtype);
    for (int64_t e = 0; e < out.numel(); e++) {
        int64_t i = (e / C) % R, j = e % C;
        if (p.upper ? j - i >= k : j - i <= k) std::memcpy(out.mut() + size_t(e) * es, x.data + size_t(e) * es, es);
    }
    return out;
}

HostTensor host_cum(const HostTensor& x, const Ints& axes, const HostCumParams& p) {
    int64_t r = int64_t(x.shape.size());
    if (axes.size() != 1) throw OpError("axis must hold one value");
    int64_t axis = host_axis(axes[0], r, "axis");
    int64_t outer = 1, inner = 1, A = x.shape[size_t(axis)];
    for (int64_t i = 0; i < axis; i++) outer *= x.shape[size_t(i)];
    for (int64_t i = axis + 1; i < r; i++) inner *= x.shape[size_t(i)];
    HostTensor out = HostTensor::alloc(x.dtype, x.shape);
    bool is_int = !onnx2ggml::dtype_is_float(x.dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double acc = p.product ? 1 : 0;
            int64_t iacc = p.product ? 1 : 0;
            for (int64_t t = 0; t < A; t++) {
                int64_t e = (o * A + (p.reverse ? A - 1 - t : t)) * inner + j;
                if (p.exclusive) is_int ? out.set_i64(e, iacc) : out.set_f64(e, acc);
                if (p.product) {
                    acc *= x.f64(e);
                    iacc = int64_t(uint64_t(iacc) * uint64_t(x.i64(e)));
                } else {
                    acc += x.f64(e);
                    iacc = int64_t(uint64_t(iacc) + uint64_t(x.i64(e)));
                }
                if (!p.exclusive) is_int ? out.set_i64(e, iacc) : out.set_f64(e, acc);
            }
        }
    return out;
}

}  // namespace o2g
