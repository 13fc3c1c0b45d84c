// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin.
#include <algorithm>
#include <cmath>

#include "ops/custom.h"
#include "ops/host.h"

namespace onnx2ggml {

namespace {

struct ReduceSpec { std::vector<bool> red; bool keep; bool noop; };

ReduceSpec reduce_spec(Lower& L, bool axes_input) {
    int r = L.rank(0);
    ReduceSpec s;
    s.keep = L.node.get_int("keepdims", 1) != 0;
    std::vector<int64_t> axes;
    if (axes_input) {
        if (L.has(1)) axes = L.ints(1);
    } else axes = L.node.get_ints("axes");
    s.noop = axes.empty() && L.node.get_int("noop_with_empty_axes", 0) != 0;
    s.red.assign(size_t(r), axes.empty());
    for (auto a : axes) s.red[size_t(norm_axis(L, a, r))] = true;
    return s;
}

Shape reduced_shape(const Shape& in, const ReduceSpec& s) {
    Shape o;
    for (size_t i = 0; i < in.size(); i++) {
        if (!s.red[i]) o.push_back(in[i]);
        else if (s.keep) o.push_back(1);
    }
    return o;
}

bool axes_from_input(Lower& L) {
    const std::string& op = L.node.op_type;
    return op == "ReduceSum" ? L.opset >= 13 : L.opset >= 18;
}

ReduceK kind_of(const std::string& op) {
    if (op == "ReduceSum") return ReduceK::Sum;
    if (op == "ReduceMean") return ReduceK::Mean;
    if (op == "ReduceMax") return ReduceK::Max;
    if (op == "ReduceMin") return ReduceK::Min;
    if (op == "ReduceProd") return ReduceK::Prod;
    if (op == "ReduceL1") return ReduceK::L1;
    if (op == "ReduceL2") return ReduceK::L2;
    if (op == "ReduceLogSum") return ReduceK::LogSum;
    if (op == "ReduceLogSumExp") return ReduceK::LogSumExp;
    return ReduceK::SumSquare;
}

// Moves reduced axes innermost and flattens them into ggml rows.
ggml_tensor* to_rows(Lower& L, ggml_tensor* x, const Shape& in, const std::vector<bool>& red) {
    int r = int(in.size());
    std::vector<int> perm;
    int64_t R = 1, K = 1;
    for (int i = 0; i < r; i++)
        if (!red[size_t(i)]) {
            perm.push_back(i);
            K *= in[size_t(i)];
        }
    for (int i = 0; i < r; i++)
        if (red[size_t(i)]) {
            perm.push_back(i);
            R *= in[size_t(i)];
        }
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (!id) {
        int g[4] = {0, 1, 2, 3};
        for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
        x = ggml_cont(L.ctx, ggml_permute(L.ctx, x, g[0], g[1], g[2], g[3]));
    }
    return ggml_reshape_2d(L.ctx, L.cont(x), R, K);
}

}  // namespace

void lower_Reduce(Lower& L) {
    ReduceSpec s = reduce_spec(L, axes_from_input(L));
    const Shape& in = L.shape(0);
    if (s.noop) return L.pass(0, 0);
    ReduceK k = kind_of(L.node.op_type);
    if (shape_numel(in) == 0) {  // the result does not depend on data: each output is the reduction's identity
        double v = 0;
        switch (k) {
            case ReduceK::Prod: v = 1; break;
            case ReduceK::Max: case ReduceK::LogSum: case ReduceK::LogSumExp: v = -INFINITY; break;
            case ReduceK::Min: v = INFINITY; break;
            case ReduceK::Mean: v = NAN; break;
            default: break;
        }
        Shape os = reduced_shape(in, s);
        return L.out_host(0, HostTensor::from_f64(L.dtype(0), os, std::vector<double>(size_t(shape_numel(os)), v)));
    }
    ggml_tensor* x = to_rows(L, L.t(0), in, s.red);
    ggml_tensor* y = k == ReduceK::Sum ? ggml_sum_rows(L.ctx, x) : k == ReduceK::Mean ? ggml_mean(L.ctx, x)
                                                                                    : custom_rows(L, x, k);
    Shape os = reduced_shape(in, s);
    L.out(0, reshape_to(L, y, os), L.dtype(0), int(os.size()));
}

void host_Reduce(Lower& L) {
    ReduceSpec s = reduce_spec(L, axes_from_input(L));
    if (s.noop) return L.pass(0, 0);
    const HostTensor& x = L.h(0);
    const Shape& in = x.shape;
    ReduceK k = kind_of(L.node.op_type);
    Shape ks;  // keepdims shape for index math
    for (size_t i = 0; i < in.size(); i++) ks.push_back(s.red[i] ? 1 : in[i]);
    int64_t on = shape_numel(ks);
    bool is_int = !dtype_is_float(x.dtype);
    std::vector<double> acc(size_t(on), 0.0), mx(size_t(on), -INFINITY);
    std::vector<int64_t> iacc(size_t(on), 0), cnt(size_t(on), 0);
    if (k == ReduceK::Prod) {
        std::fill(acc.begin(), acc.end(), 1.0);
        std::fill(iacc.begin(), iacc.end(), 1);
    }
    if (k == ReduceK::Max) { std::fill(acc.begin(), acc.end(), -INFINITY); std::fill(iacc.begin(), iacc.end(), INT64_MIN); }
    if (k == ReduceK::Min) { std::fill(acc.begin(), acc.end(), INFINITY); std::fill(iacc.begin(), iacc.end(), INT64_MAX); }
    auto ost = strides_of(ks);
    std::vector<int64_t> c(in.size(), 0);
    for (int64_t e = 0; e < x.numel(); e++) {
        int64_t o = 0;
        for (size_t d = 0; d < in.size(); d++)
            if (!s.red[d]) o += c[d] * ost[d];
        double v = x.f64(e);
        int64_t iv = x.i64(e);
        switch (k) {
            case ReduceK::Max: acc[size_t(o)] = std::max(acc[size_t(o)], v); iacc[size_t(o)] = std::max(iacc[size_t(o)], iv); break;
            case ReduceK::Min: acc[size_t(o)] = std::min(acc[size_t(o)], v); iacc[size_t(o)] = std::min(iacc[size_t(o)], iv); break;
            case ReduceK::Prod: acc[size_t(o)] *= v; iacc[size_t(o)] *= iv; break;
            case ReduceK::L1: acc[size_t(o)] += std::fabs(v); iacc[size_t(o)] += iv < 0 ? -iv : iv; break;
            case ReduceK::L2: case ReduceK::SumSquare: acc[size_t(o)] += v * v; iacc[size_t(o)] += iv * iv; break;
            case ReduceK::LogSumExp:
                mx[size_t(o)] = std::max(mx[size_t(o)], v);
                acc[size_t(o)] += 0;
                break;
            default: acc[size_t(o)] += v; iacc[size_t(o)] += iv;
        }
        cnt[size_t(o)]++;
        for (int d = int(in.size()) - 1; d >= 0; d--) {
            if (++c[size_t(d)] < in[size_t(d)]) break;
            c[size_t(d)] = 0;
        }
    }
    if (k == ReduceK::LogSumExp) {  // second pass with the max subtracted
        std::fill(c.begin(), c.end(), 0);
        for (int64_t e = 0; e < x.numel(); e++) {
            int64_t o = 0;
            for (size_t d = 0; d < in.size(); d++)
                if (!s.red[d]) o += c[d] * ost[d];
            acc[size_t(o)] += std::exp(x.f64(e) - mx[size_t(o)]);
            for (int d = int(in.size()) - 1; d >= 0; d--) {
                if (++c[size_t(d)] < in[size_t(d)]) break;
                c[size_t(d)] = 0;
            }
        }
    }
    HostTensor out = HostTensor::alloc(x.dtype, reduced_shape(in, s));
    for (int64_t o = 0; o < on; o++) {
        double v = acc[size_t(o)];
        switch (k) {
            case ReduceK::Mean: v /= double(std::max<int64_t>(1, cnt[size_t(o)])); break;
            case ReduceK::L2: v = std::sqrt(v); break;
            case ReduceK::LogSum: v = std::log(v); break;
            case ReduceK::LogSumExp: v = std::log(v) + mx[size_t(o)]; break;
            default: break;
        }
        if (is_int && k != ReduceK::Mean && k != ReduceK::L2 && k != ReduceK::LogSum && k != ReduceK::LogSumExp)
            out.set_i64(o, iacc[size_t(o)]);
        else if (is_int && k == ReduceK::Mean) out.set_i64(o, iacc[size_t(o)] / std::max<int64_t>(1, cnt[size_t(o)]));
        else out.set_f64(o, v);
    }
    L.out_host(0, std::move(out));
}

static void arg_common(Lower& L, bool is_max, bool host) {
    const Shape& in = L.shape(0);
    int r = int(in.size());
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    bool keep = L.node.get_int("keepdims", 1) != 0, last = L.node.get_int("select_last_index", 0) != 0;
    Shape os;
    for (int i = 0; i < r; i++)
        if (i != axis) os.push_back(in[size_t(i)]);
        else if (keep) os.push_back(1);
    if (!host) {
        std::vector<bool> red(size_t(r), false);
        red[size_t(axis)] = true;
        ggml_tensor* x = to_rows(L, L.t(0), in, red);
        ReduceK k = is_max ? (last ? ReduceK::ArgMaxLast : ReduceK::ArgMax) : (last ? ReduceK::ArgMinLast : ReduceK::ArgMin);
        return L.out(0, reshape_to(L, custom_rows(L, x, k), os), DType::INT64, int(os.size()));
    }
    const HostTensor& x = L.h(0);
    int64_t outer = 1, inner = 1, A = in[size_t(axis)];
    for (int i = 0; i < axis; i++) outer *= in[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= in[size_t(i)];
    HostTensor out = HostTensor::alloc(DType::INT64, os);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t best = 0;
            for (int64_t a = 1; a < A; a++) {
                double v = x.f64((o * A + a) * inner + j), b = x.f64((o * A + best) * inner + j);
                bool better = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
                if (better) best = a;
            }
            out.set_i64(o * inner + j, best);
        }
    L.out_host(0, std::move(out));
}
void lower_ArgMax(Lower& L) { arg_common(L, true, false); }
void lower_ArgMin(Lower& L) { arg_common(L, false, false); }
void host_ArgMax(Lower& L) { arg_common(L, true, true); }
void host_ArgMin(Lower& L) { arg_common(L, false, true); }

}  // namespace onnx2ggml
