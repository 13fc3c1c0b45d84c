#!/usr/bin/env python3
"""Build examples/small_cnn.onnx with onnx.helper (no torch needed), deterministically.

Graph (opset 13):
  image[1,3,32,32] -> Conv 3x3 pad1 -> BatchNormalization -> Relu -> MaxPool 2x2
  -> Conv 3x3 stride 2, asymmetric pads (0,0,1,1) -> Clip(0, 6) -> GlobalAveragePool
  -> Flatten -> Gemm (transB=1) -> Softmax -> probs[1,10]

Also writes examples/small_cnn_input.npy (seeded) and examples/small_cnn_ref.npy
(onnxruntime's output for that input).

Usage: .venv/bin/python scripts/make_example_model.py [--out-dir examples]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240611
C_IN, C1, C2, N_CLS = 3, 64, 128, 10


def build_model(rng: np.random.Generator) -> onnx.ModelProto:
    def uniform(shape, bound):
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    w1 = rng.normal(0.0, np.sqrt(2.0 / (C_IN * 9)), size=(C1, C_IN, 3, 3)).astype(np.float32)
    b1 = uniform((C1,), 0.1)
    bn_scale = rng.uniform(0.5, 1.5, size=(C1,)).astype(np.float32)
    bn_bias = uniform((C1,), 0.2)
    bn_mean = uniform((C1,), 0.3)
    bn_var = rng.uniform(0.5, 2.0, size=(C1,)).astype(np.float32)
    w2 = rng.normal(0.0, np.sqrt(2.0 / (C1 * 9)), size=(C2, C1, 3, 3)).astype(np.float32)
    b2 = uniform((C2,), 0.1)
    fc_w = uniform((N_CLS, C2), 1.0 / np.sqrt(C2)) * 4.0  # transB=1 layout [N, K]
    fc_b = uniform((N_CLS,), 0.1)

    inits = [
        numpy_helper.from_array(w1, "conv1.weight"),
        numpy_helper.from_array(b1, "conv1.bias"),
        numpy_helper.from_array(bn_scale, "bn1.weight"),
        numpy_helper.from_array(bn_bias, "bn1.bias"),
        numpy_helper.from_array(bn_mean, "bn1.running_mean"),
        numpy_helper.from_array(bn_var, "bn1.running_var"),
        numpy_helper.from_array(w2, "conv2.weight"),
        numpy_helper.from_array(b2, "conv2.bias"),
        numpy_helper.from_array(np.array(0.0, np.float32), "clip_min"),
        numpy_helper.from_array(np.array(6.0, np.float32), "clip_max"),
        numpy_helper.from_array(fc_w, "fc.weight"),
        numpy_helper.from_array(fc_b, "fc.bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["conv1_out"],
                         name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization",
                         ["conv1_out", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"],
                         ["bn1_out"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("MaxPool", ["relu1_out"], ["pool1_out"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        # 16x16 -> pads (top=0,left=0,bottom=1,right=1), stride 2 -> 8x8
        helper.make_node("Conv", ["pool1_out", "conv2.weight", "conv2.bias"], ["conv2_out"],
                         name="conv2", kernel_shape=[3, 3], pads=[0, 0, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["conv2_out", "clip_min", "clip_max"], ["clip_out"], name="relu6"),
        helper.make_node("GlobalAveragePool", ["clip_out"], ["gap_out"], name="gap"),
        helper.make_node("Flatten", ["gap_out"], ["flat_out"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat_out", "fc.weight", "fc.bias"], ["logits"], name="fc",
                         alpha=1.0, beta=1.0, transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        inputs=[helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, C_IN, 32, 32])],
        outputs=[helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, N_CLS])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnx2ggml-make_example_model")
    model.ir_version = 7  # opset 13 era; keeps the file loadable by older runtimes
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out-dir", default=os.path.join(repo, "examples"))
    args = ap.parse_args()

    rng = np.random.default_rng(SEED)
    model = build_model(rng)
    os.makedirs(args.out_dir, exist_ok=True)
    model_path = os.path.join(args.out_dir, "small_cnn.onnx")
    onnx.save(model, model_path)

    x = np.random.default_rng(SEED + 1).standard_normal((1, C_IN, 32, 32)).astype(np.float32)
    np.save(os.path.join(args.out_dir, "small_cnn_input.npy"), x)

    import onnxruntime as ort
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    (probs,) = sess.run(["probs"], {"image": x})
    np.save(os.path.join(args.out_dir, "small_cnn_ref.npy"), probs)
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes); probs={np.round(probs, 4)}")


if __name__ == "__main__":
    main()
