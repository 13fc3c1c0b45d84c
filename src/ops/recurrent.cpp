// Recurrent ONNX ops: RNN, GRU, LSTM (7, 14: layout; 22).
#include <cctype>

#include "ops/fold.h"
#include "ops/host.h"

namespace onnx2ggml {

namespace {

enum class Cell { RNN, GRU, LSTM };

int parse_act(Lower& L, const std::string& s) {
    std::string l;
    for (char ch : s) l += char(std::tolower(static_cast<unsigned char>(ch)));
    if (l == "sigmoid") return o2g::kActSigmoid;
    if (l == "tanh") return o2g::kActTanh;
    if (l == "relu") return o2g::kActRelu;
    if (l == "affine") return o2g::kActAffine;
    if (l == "leakyrelu") return o2g::kActLeakyRelu;
    if (l == "thresholdedrelu") return o2g::kActThresholdedRelu;
    if (l == "scaledtanh") return o2g::kActScaledTanh;
    if (l == "hardsigmoid") return o2g::kActHardSigmoid;
    if (l == "elu") return o2g::kActElu;
    if (l == "softsign") return o2g::kActSoftsign;
    if (l == "softplus") return o2g::kActSoftplus;
    L.error("unsupported activation '" + s + "'");
}

// The activations, with alpha/beta consumed in order by the functions that take them.
void read_activations(Lower& L, Cell cell, int64_t D, int n_act, o2g::RecurrentParams& p) {
    std::vector<std::string> names;
    if (const Attribute* a = L.node.attr("activations")) names = a->strings;
    auto alphas = L.node.get_floats("activation_alpha"), betas = L.node.get_floats("activation_beta");
    size_t ia = 0, ib = 0;
    for (int64_t d = 0; d < D; d++)
        for (int k = 0; k < n_act; k++) {
            size_t idx = size_t(d * n_act + k);
            int a;
            if (idx < names.size()) a = parse_act(L, names[idx]);
            else if (!names.empty() && names.size() == size_t(n_act)) a = parse_act(L, names[size_t(k)]);
            else if (!names.empty()) L.error("activations has the wrong length");
            else a = cell == Cell::RNN || k > 0 ? o2g::kActTanh : o2g::kActSigmoid;
            float da = 0, db = 0;
            bool na = false, nb = false;
            switch (a) {
                case o2g::kActAffine: da = 1, db = 0, na = nb = true; break;
                case o2g::kActLeakyRelu: da = 0.01f, na = true; break;
                case o2g::kActThresholdedRelu: da = 1.0f, na = true; break;
                case o2g::kActScaledTanh: da = 1.0f, db = 1.0f, na = nb = true; break;
                case o2g::kActHardSigmoid: da = 0.2f, db = 0.5f, na = nb = true; break;
                case o2g::kActElu: da = 1.0f, na = true; break;
                default: break;
            }
            if (na && ia < alphas.size()) da = alphas[ia++];
            if (nb && ib < betas.size()) db = betas[ib++];
            p.activations.push_back(a);
            p.activation_alpha.push_back(da);
            p.activation_beta.push_back(db);
        }
}

void lower_recurrent(Lower& L, Cell cell) {
    o2g::RecurrentParams p;
    int64_t G = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
    int n_act = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
    std::string dir = L.node.get_string("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional") L.error("unknown direction '" + dir + "'");
    p.direction = dir == "forward" ? 0 : dir == "reverse" ? 1 : 2;
    int64_t D = p.direction == 2 ? 2 : 1;
    p.layout = L.node.get_int("layout", 0) != 0;
    p.linear_before_reset = cell == Cell::GRU && L.node.get_int("linear_before_reset", 0) != 0;
    p.input_forget = cell == Cell::LSTM && L.node.get_int("input_forget", 0) != 0;
    p.clip = L.node.has("clip") ? L.node.get_float("clip", 0.f) : 0.f;
    if (L.node.has("clip") && p.clip <= 0) L.error("clip must be positive");
    const Shape &xs = L.shape(0), &ws = L.shape(1), &rs = L.shape(2);
    if (xs.size() != 3) L.error("X must be 3-D");
    int64_t S = p.layout ? xs[1] : xs[0], B = p.layout ? xs[0] : xs[1], I = xs[2];
    const int64_t H = L.node.get_int("hidden_size", rs.size() == 3 ? rs[2] : 0);
    // Bounded before G * H is formed (found by tests/fuzz: hidden_size INT64_MIN overflowed it).
    if (H < 0 || H > (int64_t(1) << 30)) L.error("hidden_size " + std::to_string(H) + " is out of range");
    const int64_t GH = G * H;
    if (ws != Shape{D, GH, I}) L.error("W must have shape (num_directions, " + std::to_string(G) + " * hidden_size, input_size)");
    if (rs != Shape{D, GH, H}) L.error("R must have shape (num_directions, " + std::to_string(G) + " * hidden_size, hidden_size)");
    if (S == 0 || B == 0 || H == 0) L.error("empty sequence, batch or hidden size");
    read_activations(L, cell, D, n_act, p);
    Shape state = p.layout ? Shape{B, D, H} : Shape{D, B, H};
    auto opt = [&](int i, const Shape& want, const char* what) -> ggml_tensor* {
        if (!L.has(i)) return nullptr;
        if (L.shape(i) != want) L.error(std::string(what) + " must have shape " + shape_str(want));
        return L.t(i);
    };
    ggml_tensor *x = L.t(0), *w = L.t(1), *r = L.t(2);
    ggml_tensor* b = opt(3, {D, 2 * GH}, "B");
    ggml_tensor* lens = opt(4, {B}, "sequence_lens");
    ggml_tensor* h0 = opt(5, state, "initial_h");
    if (const Val* lv = L.has(4) ? &L.in(4) : nullptr)
        if (lv->host)
            for (int64_t i = 0; i < lv->host->numel(); i++)
                if (lv->host->i64(i) < 0 || lv->host->i64(i) > S) L.error("sequence_lens value out of range");
    ggml_tensor* all;
    if (cell == Cell::LSTM) {
        ggml_tensor* c0 = opt(6, state, "initial_c");
        ggml_tensor* peep = opt(7, {D, 3 * H}, "P");
        all = O2G_CALL(L, o2g::lstm, x, w, r, b, lens, h0, c0, peep, p);
    } else if (cell == Cell::GRU) {
        all = O2G_CALL(L, o2g::gru, x, w, r, b, lens, h0, p);
    } else {
        all = O2G_CALL(L, o2g::rnn, x, w, r, b, lens, h0, p);
    }
    DType dt = L.dtype(0);
    if (wanted_out(L, 0)) L.out(0, O2G_CALL(L, o2g::recurrent_output, all, 0, p.layout), dt, 4);
    for (int o = 1; o <= (cell == Cell::LSTM ? 2 : 1); o++)
        if (wanted_out(L, size_t(o))) L.out(o, O2G_CALL(L, o2g::recurrent_output, all, o, p.layout), dt, 3);
}

}  // namespace

void lower_RNN(Lower& L) { lower_recurrent(L, Cell::RNN); }
void lower_GRU(Lower& L) { lower_recurrent(L, Cell::GRU); }
void lower_LSTM(Lower& L) { lower_recurrent(L, Cell::LSTM); }

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& recurrent_ops() {
    static const std::vector<OpDef> t = {
        {.op = "RNN", .since = 7, .accepts = "in=3..6 out=0..2 r0=3 r1=3 r2=3 @hidden_size:i>=1",
         .ggml = lower_RNN, .math = true},
        {.op = "GRU", .since = 7, .accepts = "in=3..6 out=0..2 r0=3 r1=3 r2=3 @hidden_size:i>=1",
         .ggml = lower_GRU, .math = true},
        {.op = "LSTM", .since = 7, .accepts = "in=3..8 out=0..3 r0=3 r1=3 r2=3 @hidden_size:i>=1",
         .ggml = lower_LSTM, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
