// Matrix products: MatMul (1-13), Gemm (1-13), Einsum (12).
#include <algorithm>
#include <cctype>
#include <map>

#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {


// MatMul, and onnx2ggml.MatMulBias (fuse_matmul_bias: MatMul then Add of a bias [N], input 2).
void lower_MatMul(Lower& L) {
    Shape as = L.shape(0), bs = L.shape(1);
    if (as.size() > 4 || bs.size() > 4) L.error("MatMul of rank > 4 is not supported");
    if (as.empty() || bs.empty())  // found by tests/fuzz: a scalar operand indexed its shape at -2
        L.error("MatMul of a scalar: A " + shape_str(as) + ", B " + shape_str(bs) + " (both must have rank >= 1)");
    o2g::MatMulParams p;
    p.a_vector = as.size() == 1;
    p.b_vector = bs.size() == 1;
    if (p.a_vector) as = {1, as[0]};
    if (p.b_vector) bs = {bs[0], 1};
    if (as.back() != bs[bs.size() - 2])
        L.error("A " + shape_str(L.shape(0)) + " and B " + shape_str(L.shape(1)) + " do not multiply");
    // Output: the broadcast batch dims, then M and N; 1-D operands drop theirs.
    Shape os = broadcast_shapes(L, Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
    os.push_back(as[as.size() - 2]);
    os.push_back(bs.back());
    if (os.size() > 4) L.error("MatMul result of rank > 4 is not supported");
    int rank = int(os.size()) - (p.a_vector ? 1 : 0) - (p.b_vector ? 1 : 0);
    if (L.node.op_type == "onnx2ggml.MatMulBias") {
        if (L.rank(2) != 1 || L.shape(2)[0] != bs.back()) L.error("bias " + shape_str(L.shape(2)) + " is not [N]");
        p.swish_alpha = L.node.get_float("swish_alpha", 0.0f);
        ggml_tensor* residual = nullptr;
        if (L.has(3)) {  // fuse_matmul_bias: a following Add of another value
            Shape ys = os;  // the product's ONNX shape
            if (p.b_vector) ys.pop_back();
            if (p.a_vector) ys.erase(ys.end() - (p.b_vector ? 1 : 2));
            if (L.dtype(3) != L.dtype(0)) L.error("residual of another type than the product");
            const Shape sum = broadcast_shapes(L, ys, L.shape(3));
            if (sum.size() > 4) L.error("residual sum of rank > 4 is not supported");
            residual = L.t(3);
            rank = int(sum.size());
        }
        L.out(0, O2G_CALL(L, o2g::matmul_bias, L.t(0), L.t(1), L.t(2), residual, p), L.dtype(0), rank);
        return;
    }
    L.out(0, O2G_CALL(L, o2g::matmul, L.t(0), L.t(1), p), L.dtype(0), rank);
}

void lower_Gemm(Lower& L) {
    o2g::GemmParams p;
    p.trans_a = L.node.get_int("transA", 0) != 0;
    p.trans_b = L.node.get_int("transB", 0) != 0;
    p.alpha = L.node.get_float("alpha", 1.0f);
    p.beta = L.node.get_float("beta", 1.0f);
    const Shape &as = L.shape(0), &bs = L.shape(1);
    const int64_t K = p.trans_a ? as[0] : as[1];
    if (K != (p.trans_b ? bs[1] : bs[0])) L.error("A " + shape_str(as) + " and B " + shape_str(bs) + " do not multiply");
    const bool use_c = L.has(2) && p.beta != 0.0f;
    if (use_c) {
        Shape ys = {p.trans_a ? as[1] : as[0], p.trans_b ? bs[0] : bs[1]};
        if (broadcast_shapes(L, ys, L.shape(2)) != ys) L.error("C does not broadcast to the output");
    }
    L.out(0, O2G_CALL(L, o2g::gemm, L.t(0), L.t(1), use_c ? L.t(2) : nullptr, p), L.dtype(0), 2);
}

// ---- Einsum: two-operand contractions and single-operand permutes/sums ----
namespace {

void parse_einsum(Lower& L, std::vector<std::string>& ins, std::string& out) {
    std::string eq;
    for (char c : L.node.get_string("equation", ""))
        if (c != ' ') eq += c;
    auto arrow = eq.find("->");
    std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
    size_t p = 0;
    while (true) {
        auto q = lhs.find(',', p);
        ins.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (q == std::string::npos) break;
        p = q + 1;
    }
    for (auto& t : ins)
        if (t.find('.') != std::string::npos) L.error("ellipsis in Einsum is not supported");
    if (arrow != std::string::npos) out = eq.substr(arrow + 2);
    else {  // implicit output: the letters seen once, in alphabetical order
        std::map<char, int> cnt;
        for (auto& t : ins)
            for (char c : t) cnt[c]++;
        for (auto& [c, n] : cnt)
            if (n == 1) out += c;
    }
}

o2g::Ints codes(const std::string& s) { return o2g::Ints(s.begin(), s.end()); }

}  // namespace

void lower_Einsum(Lower& L) {
    std::vector<std::string> ins;
    std::string out;
    parse_einsum(L, ins, out);
    if (int(ins.size()) != L.n_in() || ins.size() > 2) L.error("Einsum with more than two operands is not supported");
    if (ins.size() == 1 && ins[0].size() > 4 && out.size() == ins[0].size() && int(out.size()) == L.rank(0)) {
        // A pure permutation of rank > 4 (SD3's unpatchify "nhwpqc->nchpwq") is a Transpose.
        std::vector<int64_t> perm;
        for (char c : out) {
            auto a = ins[0].find(c);
            if (a == std::string::npos || std::count(out.begin(), out.end(), c) != 1) L.error("Einsum output index not a permutation");
            perm.push_back(int64_t(a));
        }
        ggml_tensor* y = O2G_CALL(L, o2g::transpose_nd, L.t(0), L.shape_sym(0), o2g::TransposeNdParams{perm});
        return O2G_OUT_SHAPE(L, 0, y, L.dtype(0), o2g::transpose_shape, L.shape_sym(0), perm);
    }
    std::map<char, int64_t> dim;
    for (int i = 0; i < L.n_in(); i++) {
        const std::string& t = ins[size_t(i)];
        if (int(t.size()) != L.rank(i)) L.error("equation does not match input rank");
        if (t.size() > 4) L.error("Einsum operand of rank > 4 is not supported (only a permutation of one operand)");
        for (size_t a = 0; a < t.size(); a++) {
            if (!std::isalpha(static_cast<unsigned char>(t[a]))) L.error("subscripts must be letters");
            for (size_t b = a + 1; b < t.size(); b++)
                if (t[a] == t[b]) L.error("repeated index (diagonal) is not supported");
            dim[t[a]] = L.shape(i)[a];
        }
    }
    Shape os;
    for (char c : out) {
        if (!dim.count(c)) L.error("output index not found in inputs");
        os.push_back(dim[c]);
    }
    if (os.size() > 4) L.error("Einsum output of rank > 4 is not supported");
    o2g::EinsumParams p;
    p.a = codes(ins[0]);
    if (ins.size() > 1) p.b = codes(ins[1]);
    p.out = codes(out);
    ggml_tensor* y = O2G_CALL(L, o2g::einsum, L.t(0), ins.size() > 1 ? L.t(1) : nullptr, p);
    L.out(0, y, L.dtype(0), int(os.size()));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----
double matmul_flops(Lower& L) {
    if (!L.has(0) || L.rank(0) < 1) return 0;
    const Shape& a = L.shape(0);
    int64_t K = L.node.op_type == "Gemm" && L.node.get_int("transA", 0) ? a[0] : a.back();
    return 2 * double(shape_numel(L.outs[0].shape)) * double(K);
}

const std::vector<OpDef>& matmul_ops() {
    static const std::vector<OpDef> t = {
        {.op = "MatMul", .since = 1, .accepts = "in=2 out=1 r0>=1 r1>=1",
         .ggml = lower_MatMul, .math = true, .flops = matmul_flops},
        {.op = "onnx2ggml.MatMulBias", .since = 1, .ggml = lower_MatMul, .math = true, .flops = matmul_flops},  // fuse_matmul_bias
        {.op = "Gemm", .since = 1, .accepts = "in=2..3 out=1 r0=2 r1=2",
         .ggml = lower_Gemm, .math = true, .flops = matmul_flops},
        {.op = "Einsum", .since = 12, .accepts = "in=1.. out=1", .ggml = lower_Einsum, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
