"""Losses: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (targets are host integers: fed as data here)."""

from op_case import K, R, V, case

i64 = "int64"

case("NegativeLogLikelihoodLoss", R(3, 5), R(3, dtype=i64, lo=0, hi=5))
case("NegativeLogLikelihoodLoss", R(2, 4, 3), R(2, 3, dtype=i64, lo=0, hi=4), K([0.5, 1.0, 2.0, 0.25]),
     reduction="sum")
case("NegativeLogLikelihoodLoss", R(2, 3, 2, 2), V([[[0, 1], [2, 1]], [[1, 1], [0, 2]]], i64), reduction="none",
     ignore_index=1)
# (mean with ignore_index -1 and no weight follows onnx.reference, which divides by every target; onnxruntime
# divides by the non-ignored ones, so that combination is not checked here)
case("NegativeLogLikelihoodLoss", R(4, 3), V([0, -1, 2, -1], i64), ignore_index=-1, reduction="sum")
case("NegativeLogLikelihoodLoss", R(4, 3), V([0, 2, 2, 1], i64), K([0.2, 0.3, 0.5]), ignore_index=2)
case("NegativeLogLikelihoodLoss", R(2, 3, 2, 2, 2), R(2, 2, 2, 2, dtype=i64, lo=0, hi=3), reduction="none")
case("SoftmaxCrossEntropyLoss", R(3, 5), R(3, dtype=i64, lo=0, hi=5), outputs=2)
case("SoftmaxCrossEntropyLoss", R(2, 4, 3), R(2, 3, dtype=i64, lo=0, hi=4), K([0.5, 1.0, 2.0, 0.25]),
     reduction="sum", outputs=2)
case("SoftmaxCrossEntropyLoss", R(2, 3, 2, 2), V([[[0, 1], [2, 1]], [[1, 1], [0, 2]]], i64), reduction="none",
     ignore_index=1, outputs=2)
case("SoftmaxCrossEntropyLoss", R(2, 3, 2, 2, 2), R(2, 2, 2, 2, dtype=i64, lo=0, hi=3), outputs=2)
