"""Recurrent networks: RNN, GRU, LSTM. (layout=1 is left to the ONNX node tests *_batchwise: onnxruntime and\nonnx.reference 1.2x cannot run it.)"""

from op_case import K, R, W, case

# X [S, B, I] (layout 0) or [B, S, I] (layout 1), W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H].
case("RNN", R(5, 2, 3), W(1, 4, 3), W(1, 4, 4), W(1, 8), hidden_size=4, outputs=2)
case("RNN", R(4, 3, 2), W(2, 3, 2), W(2, 3, 3), None, None, R(2, 3, 3), hidden_size=3, direction="bidirectional",
     activations=["Relu", "Tanh"], outputs=2)
case("RNN", R(6, 2, 3), W(1, 4, 3), W(1, 4, 4), W(1, 8), K([6, 3], "int32"), hidden_size=4, direction="reverse",
     outputs=2)
case("GRU", R(5, 2, 3), W(1, 12, 3), W(1, 12, 4), W(1, 24), hidden_size=4, outputs=2)
case("GRU", R(5, 3, 3), W(2, 12, 3), W(2, 12, 4), W(2, 24), K([5, 2, 4], "int32"), R(2, 3, 4), hidden_size=4,
     direction="bidirectional", linear_before_reset=1, outputs=2)
case("GRU", R(4, 3, 2), W(1, 9, 2), W(1, 9, 3), hidden_size=3, clip=0.5, outputs=2)
case("LSTM", R(5, 2, 3), W(1, 16, 3), W(1, 16, 4), W(1, 32), hidden_size=4, outputs=3)
case("LSTM", R(4, 3, 3), W(2, 16, 3), W(2, 16, 4), W(2, 32), K([4, 1, 3], "int32"), R(2, 3, 4), R(2, 3, 4),
     W(2, 12), hidden_size=4, direction="bidirectional", outputs=3)
case("LSTM", R(5, 2, 3), W(1, 12, 3), W(1, 12, 3), W(1, 24), None, R(1, 2, 3), R(1, 2, 3), hidden_size=3,
     direction="reverse", outputs=3)
case("LSTM", R(4, 2, 3), W(1, 16, 3), W(1, 16, 4), None, None, None, None, None, hidden_size=4, input_forget=1,
     activations=["HardSigmoid", "Tanh", "Softsign"], activation_alpha=[0.3], activation_beta=[0.4], outputs=3)
