"""Matrix product cases beyond tests/op_tests.py's: batched constant weights, padded shared dims, Einsum sums."""

from op_case import R, W, case

case("MatMul", R(2, 3, 6, 4), W(3, 4, 5))  # batched weights, transposed once per batch
case("MatMul", R(2, 40, 37), W(37, 24))  # shared dim not a multiple of 16: padded for the sgemm
case("MatMul", R(3, 20, 40), R(3, 40, 18))
case("MatMul", R(5), W(5, 3))  # 1-D left operand, constant weight
case("Gemm", R(20, 37), W(24, 37), W(24), transB=1)
case("Gemm", R(6, 5), W(5, 4), W(6, 1), alpha=2.0, beta=0.5)
case("Einsum", R(3, 4, 5), equation="ijk->ik", opset=12)
case("Einsum", R(3, 4), equation="ij->", opset=12)
case("Einsum", R(2, 3, 4, 2, 2, 5), equation="nhwpqc->nchpwq", opset=12)  # SD3 unpatchify: a rank-6 permutation
case("Einsum", R(2, 3), R(3, 4), equation="ij,jk", opset=12)  # implicit output
case("Einsum", R(2, 3, 5), R(2, 5, 4), equation="bij,bjk->bki", opset=12)
case("Einsum", R(3, 4), R(4, 5), equation="ij,jk->ijk", opset=12)  # outer products, no contraction
# Opset 6: C broadcasts only with broadcast=1 (unidirectionally, as from opset 7).
case("Gemm", R(6, 5), W(5, 4), W(4), broadcast=1, alpha=0.5, opset=6)
case("Gemm", R(5, 6), W(4, 5), W(6, 4), transA=1, transB=1, opset=6)
