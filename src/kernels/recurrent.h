// CPU kernel of RNN, GRU and LSTM: one work item per (direction, batch) runs the whole recurrence.
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

enum class Cell { RNN, GRU, LSTM };
struct ActFn { int k; float a, b; };  // k: RecurrentAct

// src 0: X * W^T [D][rows][G*H] (rows = s*B+b for layout 0, b*S+s for layout 1); then R and the optional inputs
// at their slots (-1 absent). dst holds Y, Y_h, Y_c: [S+2, D, B, H] (layout 0) or [B, S+2, D, H] (layout 1), with
// Y_h at step S and Y_c at step S+1.
struct RecurrentKernelParams {
    Cell cell;
    int64_t S, B, H, D, G;  // sequence, batch, hidden, directions, gates
    bool layout1, reverse_only, lbr, input_forget;
    float clip;  // <= 0: none
    ActFn f[2][3];
    int i_r, i_b, i_len, i_h0, i_c0, i_p;
};
void recurrent_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

}  // namespace o2g
