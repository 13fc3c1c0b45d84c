// Index maps of the indexing and movement ops (see index_maps.h).
#include "lib/index_maps.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "lib/row_gather.h"

namespace o2g {

namespace {

Ints or_default(const Ints& v, size_t n, int64_t def) { return v.empty() ? Ints(n, def) : v; }

}  // namespace

Ints element_offsets(const Ints& ds, const Ints& idx, const Ints& is, int axis, const char* op) {
    int r = int(ds.size());
    if (int(is.size()) != r) throw OpError(std::string(op) + ": indices rank must equal data rank");
    if (prod(is) != int64_t(idx.size())) throw OpError(std::string(op) + ": indices do not match their shape");
    for (int d = 0; d < r; d++)  // off the axis, an index's position is its coordinate (fuzz: a write past data)
        if (d != axis && is[size_t(d)] > ds[size_t(d)])
            throw OpError(std::string(op) + ": indices " + ints_literal(is) + " are larger than data " +
                          ints_literal(ds) + " on axis " + std::to_string(d));
    Ints dst = strides(ds), ist = strides(is), offs(idx.size());
    for (size_t k = 0; k < idx.size(); k++) {
        int64_t off = 0, rem = int64_t(k);
        for (int d = 0; d < r; d++) {
            int64_t c = rem / ist[size_t(d)];
            rem %= ist[size_t(d)];
            if (d == axis) c = wrap_index(idx[k], ds[size_t(d)], op);
            off += c * dst[size_t(d)];
        }
        offs[k] = off;
    }
    return offs;
}

RowMap gather_nd_rows(const Ints& ds, const Ints& idx, const Ints& is, int64_t b) {
    if (is.empty()) throw OpError("GatherND: indices must have rank >= 1");
    if (prod(is) != int64_t(idx.size())) throw OpError("GatherND: indices do not match their shape");
    int64_t last = is.back();
    if (b < 0 || b + last > int64_t(ds.size())) throw OpError("GatherND: indices' last dimension is too large");
    RowMap m;
    int64_t batch = 1, per_batch_rows = 1;
    for (int64_t i = 0; i < b; i++) batch *= ds[size_t(i)];
    for (size_t i = size_t(b + last); i < ds.size(); i++) m.inner *= ds[i];
    for (int64_t i = b; i < b + last; i++) per_batch_rows *= ds[size_t(i)];
    int64_t nsl = int64_t(idx.size()) / std::max<int64_t>(1, last);  // slices in total
    int64_t per_batch = nsl / std::max<int64_t>(1, batch);
    m.rows.resize(size_t(nsl));
    for (int64_t s = 0; s < nsl; s++) {
        int64_t row = 0;
        for (int64_t j = 0; j < last; j++) {
            int64_t dim = ds[size_t(b + j)];
            row = row * dim + wrap_index(idx[size_t(s * last + j)], dim, "GatherND");
        }
        m.rows[size_t(s)] = (s / std::max<int64_t>(1, per_batch)) * per_batch_rows + row;
    }
    m.os.assign(is.begin(), is.end() - 1);
    for (size_t i = size_t(b + last); i < ds.size(); i++) m.os.push_back(ds[i]);
    return m;
}

Ints scatter_nd_offsets(const Ints& ds, const Ints& idx, const Ints& is) {
    if (is.empty()) throw OpError("ScatterND: indices must have rank >= 1");
    if (prod(is) != int64_t(idx.size())) throw OpError("ScatterND: indices do not match their shape");
    int64_t last = is.back();
    if (last > int64_t(ds.size())) throw OpError("ScatterND: indices' last dimension is too large");
    int64_t inner = 1;
    for (size_t i = size_t(last); i < ds.size(); i++) inner *= ds[i];
    int64_t nsl = int64_t(idx.size()) / std::max<int64_t>(1, last);
    Ints st = strides(ds), offs;
    offs.reserve(size_t(nsl * inner));
    for (int64_t s = 0; s < nsl; s++) {
        int64_t base = 0;
        for (int64_t j = 0; j < last; j++)
            base += wrap_index(idx[size_t(s * last + j)], ds[size_t(j)], "ScatterND") * st[size_t(j)];
        for (int64_t i = 0; i < inner; i++) offs.push_back(base + i);
    }
    return offs;
}

RowMap compress_rows(const Ints& xs, const Ints& cond, int axis) {
    RowMap m;
    if (axis < 0) {
        int64_t n = std::min<int64_t>(int64_t(cond.size()), prod(xs));
        for (int64_t i = 0; i < n; i++)
            if (cond[size_t(i)]) m.rows.push_back(i);
        m.os = {int64_t(m.rows.size())};
        return m;
    }
    int r = int(xs.size());
    if (axis >= r) throw OpError("Compress: axis out of range");
    int64_t A = xs[size_t(axis)], outer = 1;
    for (int i = 0; i < axis; i++) outer *= xs[size_t(i)];
    for (int i = axis + 1; i < r; i++) m.inner *= xs[size_t(i)];
    Ints keep;
    for (int64_t i = 0; i < std::min<int64_t>(int64_t(cond.size()), A); i++)
        if (cond[size_t(i)]) keep.push_back(i);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j : keep) m.rows.push_back(o * A + j);
    m.os = xs;
    m.os[size_t(axis)] = int64_t(keep.size());
    return m;
}

// A row map is built on the host, a row at a time: 2^25 rows (a 4096x4096x2 crop along its last axis) take about
// a second; a hostile target shape must not keep the loop running for minutes (found by tests/fuzz).
constexpr int64_t kMaxRows = int64_t(1) << 25;

RowMap center_crop_pad_rows(const Ints& xs, const Ints& shape, const Ints& axes) {
    int r = int(xs.size());
    if (shape.size() != axes.size()) throw OpError("CenterCropPad: shape must have one entry per axis");
    RowMap m;
    m.os = xs;
    Ints off(size_t(r), 0);  // input index = output index + off
    for (size_t i = 0; i < axes.size(); i++) {
        int64_t a = axes[i];
        if (a < 0 || a >= r) throw OpError("CenterCropPad: axis out of range");
        int64_t dim = xs[size_t(a)], want = shape[i];
        if (want < 0) throw OpError("CenterCropPad: negative target shape");
        m.os[size_t(a)] = want;
        off[size_t(a)] = want <= dim ? (dim - want) / 2 : -((want - dim) / 2);
    }
    int last = -1;
    for (int i = 0; i < r; i++)
        if (m.os[size_t(i)] != xs[size_t(i)] || off[size_t(i)] != 0) last = i;
    if (last < 0) return m;
    int64_t nrows = 1;
    for (int i = last + 1; i < r; i++) m.inner *= xs[size_t(i)];
    for (int i = 0; i <= last; i++) {  // bounded before the product overflows (found by tests/fuzz)
        if (m.os[size_t(i)] != 0 && nrows > kMaxRows / m.os[size_t(i)])
            throw OpError("CenterCropPad: target shape " + ints_literal(shape) + " has too many rows");
        nrows *= m.os[size_t(i)];
    }
    m.rows.resize(size_t(nrows));
    for (int64_t k = 0; k < nrows; k++) {
        int64_t rem = k, src = 0, mul = 1;
        bool ok = true;
        for (int i = last; i >= 0; i--) {
            int64_t c = rem % m.os[size_t(i)] + off[size_t(i)];
            rem /= m.os[size_t(i)];
            if (c < 0 || c >= xs[size_t(i)]) ok = false;
            src += c * mul;
            mul *= xs[size_t(i)];
        }
        m.rows[size_t(k)] = ok ? src : -1;
    }
    return m;
}

RowMap reverse_sequence_rows(const Ints& xs, const Ints& lens, bool batch_major) {
    int r = int(xs.size());
    if (r < 2) throw OpError("ReverseSequence: input must have rank >= 2");
    int ba = batch_major ? 0 : 1, ta = 1 - ba;
    if (int64_t(lens.size()) != xs[size_t(ba)])
        throw OpError("ReverseSequence: " + std::to_string(lens.size()) + " sequence lengths for a batch of " +
                      std::to_string(xs[size_t(ba)]));
    RowMap m;
    m.os = xs;
    int64_t T = xs[size_t(ta)];
    for (int i = 2; i < r; i++) m.inner *= xs[size_t(i)];
    for (int64_t l : lens)
        if (l < 0 || l > T)
            throw OpError("ReverseSequence: sequence length " + std::to_string(l) + " out of range [0, " +
                          std::to_string(T) + "]");
    m.rows.resize(size_t(xs[0] * xs[1]));
    for (int64_t i = 0; i < xs[0]; i++)
        for (int64_t j = 0; j < xs[1]; j++) {
            int64_t b = ba == 0 ? i : j, t = ba == 0 ? j : i, l = lens[size_t(b)];
            int64_t st = t < l ? l - 1 - t : t;
            m.rows[size_t(i * xs[1] + j)] = ba == 0 ? b * xs[1] + st : st * xs[1] + b;
        }
    return m;
}

RowMap tensor_scatter_rows(const Ints& cs, const Ints& us, const Ints& write_indices, int axis, bool circular) {
    int r = int(cs.size());
    if (r < 2) throw OpError("TensorScatter: past_cache must have rank >= 2");
    if (int(us.size()) != r) throw OpError("TensorScatter: update must have the rank of past_cache");
    if (axis <= 0 || axis >= r) throw OpError("TensorScatter: axis must not be the batch axis");
    for (int i = 0; i < r; i++)
        if (i != axis ? us[size_t(i)] != cs[size_t(i)] : us[size_t(i)] > cs[size_t(i)])
            throw OpError("TensorScatter: update shape " + ints_literal(us) + " does not fit past_cache shape " +
                          ints_literal(cs));
    RowMap m;
    m.os = cs;
    int64_t B = cs[0], M = cs[size_t(axis)], S = us[size_t(axis)], prefix = 1;
    for (int i = 0; i < axis; i++) prefix *= cs[size_t(i)];
    for (int i = axis + 1; i < r; i++) m.inner *= cs[size_t(i)];
    Ints wi = write_indices.empty() ? Ints(size_t(B), 0) : write_indices;
    if (int64_t(wi.size()) != B) throw OpError("TensorScatter: write_indices must have batch_size elements");
    m.rows.resize(size_t(prefix * M));
    std::iota(m.rows.begin(), m.rows.end(), 0);
    int64_t per_batch = prefix / std::max<int64_t>(1, B);
    for (int64_t pi = 0; pi < prefix; pi++) {
        int64_t w = wi[size_t(pi / per_batch)];
        for (int64_t s = 0; s < S; s++) {
            int64_t idx = w + s;
            if (circular) idx = ((idx % M) + M) % M;
            else if (idx < 0 || idx >= M)
                throw OpError("TensorScatter: write index " + std::to_string(idx) + " out of range [0, " +
                              std::to_string(M) + ")");
            m.rows[size_t(pi * M + idx)] = prefix * M + pi * S + s;
        }
    }
    return m;
}

RowMap depth_to_space_map(const Ints& xs, int64_t b, bool crd, bool d2s) {
    if (xs.size() != 4) throw OpError("DepthToSpace/SpaceToDepth: expects rank 4");
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
    if (b < 1) throw OpError("blocksize " + std::to_string(b) + " must be positive");
    RowMap m;
    m.rows.reserve(size_t(N * C * H * W));
    if (d2s) {
        if (C % (b * b)) throw OpError("DepthToSpace: " + std::to_string(C) + " channels for blocksize " + std::to_string(b));
        int64_t oc = C / (b * b);
        m.os = {N, oc, H * b, W * b};
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < oc; c++)
                for (int64_t y = 0; y < H * b; y++)
                    for (int64_t x = 0; x < W * b; x++) {
                        int64_t by = y % b, bx = x % b;
                        int64_t ic = crd ? c * b * b + by * b + bx : (by * b + bx) * oc + c;
                        m.rows.push_back(((n * C + ic) * H + y / b) * W + x / b);
                    }
    } else {
        if (H % b || W % b) throw OpError("SpaceToDepth: " + std::to_string(H) + "x" + std::to_string(W) +
                                          " for blocksize " + std::to_string(b));
        m.os = {N, C * b * b, H / b, W / b};
        for (int64_t n = 0; n < N; n++)
            for (int64_t oc = 0; oc < C * b * b; oc++)
                for (int64_t y = 0; y < H / b; y++)
                    for (int64_t x = 0; x < W / b; x++) {
                        // CRD keeps each channel's block together; DCR puts the block position outermost.
                        int64_t c = crd ? oc / (b * b) : oc % C, blk = crd ? oc % (b * b) : oc / C;
                        int64_t by = blk / b, bx = blk % b;
                        m.rows.push_back(((n * C + c) * H + y * b + by) * W + x * b + bx);
                    }
    }
    return m;
}

int64_t pad_source(int mode, int64_t o, int64_t n) {
    if (o >= 0 && o < n) return o;
    if (mode == PAD_CONSTANT) return -1;
    if (mode == PAD_EDGE) return o < 0 ? 0 : n - 1;
    if (mode == PAD_WRAP) return ((o % n) + n) % n;
    if (n == 1) return 0;  // reflect
    int64_t period = 2 * (n - 1);
    int64_t m = ((o % period) + period) % period;
    return m < n ? m : period - m;
}

Ints max_unpool_offsets(const Ints& xs, const Ints& indices, const Ints& output_shape, const Ints& kernel,
                        const Ints& strides_, const Ints& pads_, Ints& os) {
    if (xs.size() < 3) throw OpError("MaxUnpool: input must have rank >= 3");
    size_t n = xs.size() - 2;
    if (kernel.size() != n) throw OpError("MaxUnpool: kernel_shape has wrong length");
    Ints s = or_default(strides_, n, 1), pads = or_default(pads_, 2 * n, 0);
    if (s.size() != n || pads.size() != 2 * n) throw OpError("MaxUnpool: attribute lengths do not match");
    // The unpooled size is a transposed convolution's: (in - 1) * stride + kernel - pads.
    Ints in(xs.begin() + 2, xs.end());
    WindowGeometry g = conv_transpose_geometry(in, kernel, AUTO_PAD_NOTSET, pads, s, {}, {}, {});
    os = {xs[0], xs[1]};
    os.insert(os.end(), g.out.begin(), g.out.end());
    Ints inferred = os;  // indices address this shape; output_shape pads it at the end of each dim
    if (!output_shape.empty()) {
        if (output_shape.size() != xs.size()) throw OpError("MaxUnpool: output_shape has wrong length");
        os = output_shape;
        for (size_t i = 0; i < os.size(); i++)
            if (os[i] < inferred[i]) throw OpError("MaxUnpool: output_shape is smaller than the unpooled shape");
    }
    if (int64_t(indices.size()) != prod(xs)) throw OpError("MaxUnpool: indices must match the input's shape");
    int64_t total = prod(inferred);
    Ints ost = strides(os), offs(indices.size());
    for (size_t i = 0; i < indices.size(); i++) {
        int64_t v = indices[i];
        if (v < 0 || v >= total) throw OpError("MaxUnpool: index " + std::to_string(v) + " out of range of the output");
        int64_t off = 0;
        for (size_t a = inferred.size(); a-- > 0;) {
            off += (v % inferred[a]) * ost[a];
            v /= inferred[a];
        }
        offs[i] = off;
    }
    return offs;
}

Ints col2im_offsets(const Ints& xs, const Ints& img, const Ints& blk, const Ints& dil, const Ints& strides_,
                    const Ints& pads_, Ints& os) {
    size_t n = img.size();
    if (xs.size() != 3 || blk.size() != n || n == 0)
        throw OpError("Col2Im: input must be [N, C*prod(block), L] with matching shapes");
    Ints d = or_default(dil, n, 1), s = or_default(strides_, n, 1), pads = or_default(pads_, 2 * n, 0);
    if (d.size() != n || s.size() != n || pads.size() != 2 * n) throw OpError("Col2Im: attribute lengths do not match");
    // Products checked: block and image shapes are input data (a fuzzer finding overflowed the block count).
    int64_t kb = 1, ltot = 1;
    bool overflow = false;
    for (int64_t b : blk) overflow |= b <= 0 || __builtin_mul_overflow(kb, b, &kb);
    if (overflow || xs[1] % kb) throw OpError("Col2Im: channel dim is not divisible by prod(block_shape)");
    int64_t N = xs[0], C = xs[1] / kb, Lc = xs[2];
    Ints nb = conv_geometry(img, blk, AUTO_PAD_NOTSET, pads, s, d).out;  // blocks per axis: a convolution's output
    for (int64_t b : nb) overflow |= __builtin_mul_overflow(ltot, b, &ltot);
    if (overflow) throw OpError("Col2Im: the number of blocks overflows 64 bits");
    if (ltot != Lc) throw OpError("Col2Im: L does not match the number of blocks");
    os = {N, C};
    os.insert(os.end(), img.begin(), img.end());
    int64_t in_img = 1;
    for (int64_t v : img) overflow |= __builtin_mul_overflow(in_img, v, &in_img);
    if (overflow || __builtin_mul_overflow(N * C, in_img, &ltot))  // N * C: an input's dims, which fit
        throw OpError("Col2Im: the image size overflows 64 bits");
    Ints offs(size_t(prod(xs))), bc(n), lc(n);
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t kk = 0; kk < kb; kk++) {
                int64_t rem = kk;
                for (size_t i = n; i-- > 0;) {
                    bc[i] = rem % blk[i];
                    rem /= blk[i];
                }
                for (int64_t l = 0; l < Lc; l++) {
                    int64_t r2 = l, off = 0;
                    bool ok = true;
                    for (size_t i = n; i-- > 0;) {
                        lc[i] = r2 % nb[i];
                        r2 /= nb[i];
                    }
                    for (size_t i = 0; i < n; i++) {
                        int64_t pos = lc[i] * s[i] - pads[i] + bc[i] * d[i];
                        if (pos < 0 || pos >= img[i]) ok = false;
                        off = off * img[i] + pos;
                    }
                    int64_t src = (nn * C * kb + c * kb + kk) * Lc + l;
                    offs[size_t(src)] = ok ? (nn * C + c) * in_img + off : -1;
                }
            }
    return offs;
}

}  // namespace o2g
