// Op library: recurrent networks (see include/onnx2ggml/ops/recurrent.h).
#include <string>
#include <vector>

#include "kernels/custom.h"
#include "kernels/recurrent.h"

namespace o2g {

namespace {

void want_ne(const ggml_tensor* t, int64_t n0, int64_t n1, int64_t n2, const char* what) {
    if (t->ne[0] != n0 || t->ne[1] != n1 || t->ne[2] != n2 || t->ne[3] != 1)
        throw OpError(std::string(what) + " must have ne [" + std::to_string(n0) + ", " + std::to_string(n1) + ", " + std::to_string(n2) + "]");
}

ggml_tensor* recurrent(Ctx& ctx, Cell cell, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b,
                       ggml_tensor* lens, ggml_tensor* h0, ggml_tensor* c0, ggml_tensor* peep, const RecurrentParams& p) {
    RecurrentKernelParams k{};
    k.cell = cell;
    k.G = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
    int n_act = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
    if (p.direction < 0 || p.direction > 2) throw OpError("direction " + std::to_string(p.direction) + " is not 0, 1 or 2");
    k.D = p.direction == 2 ? 2 : 1;
    k.reverse_only = p.direction == 1;
    k.layout1 = p.layout != 0;
    k.lbr = p.linear_before_reset;
    k.input_forget = p.input_forget;
    k.clip = p.clip;
    int64_t I = x->ne[0];
    k.S = k.layout1 ? x->ne[1] : x->ne[2];
    k.B = k.layout1 ? x->ne[2] : x->ne[1];
    k.H = r->ne[0];
    int64_t GH = k.G * k.H;
    if (x->ne[3] != 1) throw OpError("X must be 3-D");
    want_ne(w, I, GH, k.D, "W");
    want_ne(r, k.H, GH, k.D, "R");
    if (k.S == 0 || k.B == 0 || k.H == 0) throw OpError("empty sequence, batch or hidden size");
    size_t nf = size_t(k.D * n_act);
    if (p.activations.size() != nf || p.activation_alpha.size() != nf || p.activation_beta.size() != nf)
        throw OpError("activations, activation_alpha and activation_beta need " + std::to_string(int64_t(nf)) + " entries");
    for (int64_t d = 0; d < k.D; d++)
        for (int i = 0; i < n_act; i++) {
            size_t idx = size_t(d * n_act + i);
            int64_t a = p.activations[idx];
            if (a < kActSigmoid || a > kActSoftplus) throw OpError("unknown activation " + std::to_string(a));
            k.f[d][i] = ActFn{int(a), p.activation_alpha[idx], p.activation_beta[idx]};
        }
    // X * W^T for every step and direction on the device: [GH, rows, D].
    ggml_tensor* x2 = ggml_reshape_3d(ctx, f32_cont(ctx, x), I, k.S * k.B, 1);
    if (k.D > 1) x2 = ggml_repeat_4d(ctx, x2, I, k.S * k.B, k.D, 1);
    ggml_tensor* xw = device_mul_mat(ctx, ggml_reshape_3d(ctx, f32_cont(ctx, w), I, GH, k.D), x2);
    std::vector<ggml_tensor*> args = {xw, f32_cont(ctx, r)};
    k.i_r = 1;
    k.i_b = k.i_len = k.i_h0 = k.i_c0 = k.i_p = -1;
    auto opt = [&](ggml_tensor* t, bool as_f32) {
        if (!t) return -1;
        args.push_back(as_f32 ? f32_cont(ctx, t) : cont(ctx, t));
        return int(args.size()) - 1;
    };
    int64_t s0 = k.H, s1 = k.layout1 ? k.D : k.B, s2 = k.layout1 ? k.B : k.D;  // state ne
    if (b) want_ne(b, 2 * GH, k.D, 1, "B");
    if (lens && (ggml_nelements(lens) != k.B || lens->ne[0] != k.B)) throw OpError("sequence_lens must have ne [" + std::to_string(k.B) + "]");
    if (h0) want_ne(h0, s0, s1, s2, "initial_h");
    if (c0) want_ne(c0, s0, s1, s2, "initial_c");
    if (peep) want_ne(peep, 3 * k.H, k.D, 1, "P");
    k.i_b = opt(b, true);
    k.i_len = opt(lens, false);
    k.i_h0 = opt(h0, true);
    if (cell == Cell::LSTM) {
        k.i_c0 = opt(c0, true);
        k.i_p = opt(peep, true);
    }
    int64_t ne3 = k.layout1 ? k.B : k.S + 2, ne2 = k.layout1 ? k.S + 2 : k.D, ne1 = k.layout1 ? k.D : k.B;
    return ggml_custom_4d(ctx, GGML_TYPE_F32, k.H, ne1, ne2, ne3, args.data(), int(args.size()), recurrent_kernel,
                          GGML_N_TASKS_MAX, keep_params(k));
}

}  // namespace

ggml_tensor* rnn(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b, ggml_tensor* sequence_lens,
                 ggml_tensor* initial_h, const RecurrentParams& p) {
    return recurrent(ctx, Cell::RNN, x, w, r, b, sequence_lens, initial_h, nullptr, nullptr, p);
}

ggml_tensor* gru(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b, ggml_tensor* sequence_lens,
                 ggml_tensor* initial_h, const RecurrentParams& p) {
    return recurrent(ctx, Cell::GRU, x, w, r, b, sequence_lens, initial_h, nullptr, nullptr, p);
}

ggml_tensor* lstm(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b,
                  ggml_tensor* sequence_lens, ggml_tensor* initial_h, ggml_tensor* initial_c, ggml_tensor* peepholes,
                  const RecurrentParams& p) {
    return recurrent(ctx, Cell::LSTM, x, w, r, b, sequence_lens, initial_h, initial_c, peepholes, p);
}

ggml_tensor* recurrent_output(Ctx& ctx, ggml_tensor* all, int output, int layout) {
    if (output < 0 || output > 2) throw OpError("output " + std::to_string(output) + " is not 0, 1 or 2");
    // Steps run along ne3 (layout 0) or ne2 (layout 1); Y_h and Y_c are the two steps after Y's.
    int sd = layout ? 2 : 3;
    int64_t S = all->ne[sd] - 2;
    if (S < 1) throw OpError("not a recurrent result");
    if (output == 0) {
        int64_t ne[4] = {all->ne[0], all->ne[1], all->ne[2], all->ne[3]};
        ne[sd] = S;
        return cont(ctx, ggml_view_4d(ctx, all, ne[0], ne[1], ne[2], ne[3], all->nb[1], all->nb[2], all->nb[3], 0));
    }
    size_t off = size_t(S + output - 1) * all->nb[sd];
    if (!layout) return ggml_view_3d(ctx, all, all->ne[0], all->ne[1], all->ne[2], all->nb[1], all->nb[2], off);
    return cont(ctx, ggml_view_3d(ctx, all, all->ne[0], all->ne[1], all->ne[3], all->nb[1], all->nb[3], off));
}

}  // namespace o2g
