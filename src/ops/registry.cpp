// The op table: every supported ONNX op, its opset range, and how it runs. Adding an op touches this
// table, the op's file, a test case in tests/op_tests.py and the node-test allow-list.
#include <algorithm>
#include <map>

#include "ops/op.h"

namespace onnx2ggml {

void host_Abs(Lower&);
void host_Add(Lower&);
void host_And(Lower&);
void host_ArgMax(Lower&);
void host_ArgMin(Lower&);
void host_BitShift(Lower&);
void host_BitwiseAnd(Lower&);
void host_BitwiseNot(Lower&);
void host_BitwiseOr(Lower&);
void host_BitwiseXor(Lower&);
void host_Cast(Lower&);
void host_Ceil(Lower&);
void host_Clip(Lower&);
void host_Concat(Lower&);
void host_Constant(Lower&);
void host_ConstantOfShape(Lower&);
void host_CumSum(Lower&);
void host_DepthToSpace(Lower&);
void host_Div(Lower&);
void host_Equal(Lower&);
void host_Exp(Lower&);
void host_Expand(Lower&);
void host_EyeLike(Lower&);
void host_Floor(Lower&);
void host_Gather(Lower&);
void host_GatherElements(Lower&);
void host_Greater(Lower&);
void host_GreaterOrEqual(Lower&);
void host_Identity(Lower&);
void host_Less(Lower&);
void host_LessOrEqual(Lower&);
void host_Log(Lower&);
void host_Max(Lower&);
void host_Mean(Lower&);
void host_Min(Lower&);
void host_Mod(Lower&);
void host_Mul(Lower&);
void host_Neg(Lower&);
void host_Not(Lower&);
void host_Or(Lower&);
void host_Pad(Lower&);
void host_Pow(Lower&);
void host_Range(Lower&);
void host_Reciprocal(Lower&);
void host_Reduce(Lower&);
void host_Relu(Lower&);
void host_Round(Lower&);
void host_Shape(Lower&);
void host_Sign(Lower&);
void host_Size(Lower&);
void host_Slice(Lower&);
void host_Split(Lower&);
void host_Sqrt(Lower&);
void host_Sub(Lower&);
void host_Sum(Lower&);
void host_Tile(Lower&);
void host_Transpose(Lower&);
void host_Trilu(Lower&);
void host_Where(Lower&);
void host_Xor(Lower&);
void lower_Abs(Lower&);
void lower_Acos(Lower&);
void lower_Acosh(Lower&);
void lower_Add(Lower&);
void lower_And(Lower&);
void lower_ArgMax(Lower&);
void lower_ArgMin(Lower&);
void lower_Asin(Lower&);
void lower_Asinh(Lower&);
void lower_Atan(Lower&);
void lower_Atanh(Lower&);
void lower_AveragePool(Lower&);
void lower_BatchNormalization(Lower&);
void lower_Cast(Lower&);
void lower_If(Lower&);
void lower_Loop(Lower&);
void lower_Scan(Lower&);
void lower_CumSum(Lower&);
void lower_Ceil(Lower&);
void lower_Celu(Lower&);
void lower_Clip(Lower&);
void lower_Concat(Lower&);
void lower_Conv(Lower&);
void lower_ConvTranspose(Lower&);
void lower_Cos(Lower&);
void lower_Cosh(Lower&);
void lower_DepthToSpace(Lower&);
void lower_Div(Lower&);
void lower_Dropout(Lower&);
void lower_Einsum(Lower&);
void lower_Elu(Lower&);
void lower_Equal(Lower&);
void lower_Erf(Lower&);
void lower_Exp(Lower&);
void lower_Expand(Lower&);
void lower_Flatten(Lower&);
void lower_Floor(Lower&);
void lower_Gather(Lower&);
void lower_GatherElements(Lower&);
void lower_Gelu(Lower&);
void lower_Gemm(Lower&);
void lower_GlobalAveragePool(Lower&);
void lower_GlobalMaxPool(Lower&);
void lower_Greater(Lower&);
void lower_GreaterOrEqual(Lower&);
void lower_GroupNormalization(Lower&);
void lower_HardSigmoid(Lower&);
void lower_HardSwish(Lower&);
void lower_Identity(Lower&);
void lower_InstanceNormalization(Lower&);
void lower_IsInf(Lower&);
void lower_IsNaN(Lower&);
void lower_LayerNormalization(Lower&);
void lower_LeakyRelu(Lower&);
void lower_Less(Lower&);
void lower_LessOrEqual(Lower&);
void lower_Log(Lower&);
void lower_LogSoftmax(Lower&);
void lower_MatMul(Lower&);
void lower_Max(Lower&);
void lower_MaxPool(Lower&);
void lower_Mean(Lower&);
void lower_Min(Lower&);
void lower_Mish(Lower&);
void lower_Mod(Lower&);
void lower_Mul(Lower&);
void lower_Neg(Lower&);
void lower_Not(Lower&);
void lower_Or(Lower&);
void lower_PRelu(Lower&);
void lower_Pad(Lower&);
void lower_Pow(Lower&);
void lower_Reciprocal(Lower&);
void lower_Reduce(Lower&);
void lower_Relu(Lower&);
void lower_Reshape(Lower&);
void lower_Resize(Lower&);
void lower_Round(Lower&);
void lower_Selu(Lower&);
void lower_Sigmoid(Lower&);
void lower_SiLU(Lower&);
void lower_GroupNormFused(Lower&);
void lower_AttentionFused(Lower&);
void lower_Sign(Lower&);
void lower_Sin(Lower&);
void lower_Sinh(Lower&);
void lower_Slice(Lower&);
void lower_Softmax(Lower&);
void lower_Softplus(Lower&);
void lower_Softsign(Lower&);
void lower_Split(Lower&);
void lower_Sqrt(Lower&);
void lower_Squeeze(Lower&);
void lower_Sub(Lower&);
void lower_Sum(Lower&);
void lower_Tan(Lower&);
void lower_Tanh(Lower&);
void lower_ThresholdedRelu(Lower&);
void lower_Tile(Lower&);
void lower_Transpose(Lower&);
void lower_Trilu(Lower&);
void lower_Unsqueeze(Lower&);
void lower_Where(Lower&);
void lower_Xor(Lower&);
// extra.cpp
void lower_RMSNormalization(Lower&);
void lower_Attention(Lower&);
void lower_NegativeLogLikelihoodLoss(Lower&);
void lower_SoftmaxCrossEntropyLoss(Lower&);
void lower_Hardmax(Lower&);
void lower_LpNormalization(Lower&);
void lower_MeanVarianceNormalization(Lower&);
void lower_Shrink(Lower&);
void host_Shrink(Lower&);
void lower_TopK(Lower&);
void host_TopK(Lower&);
void host_OneHot(Lower&);
void host_NonZero(Lower&);
void lower_Compress(Lower&);
void lower_GatherND(Lower&);
void lower_ScatterND(Lower&);
void lower_ScatterElements(Lower&);
void lower_Swish(Lower&);
// extra3.cpp
void lower_LinearAttention(Lower&);
void lower_CausalConvWithState(Lower&);
void host_NonMaxSuppression(Lower&);
void lower_TensorScatter(Lower&);
void lower_RoiAlign(Lower&);
void host_BitCast(Lower&);
void lower_CumProd(Lower&);
void host_CumProd(Lower&);
void lower_HannWindow(Lower&);
void lower_HammingWindow(Lower&);
void lower_BlackmanWindow(Lower&);
void host_Unique(Lower&);
void lower_ReverseSequence(Lower&);
void lower_CenterCropPad(Lower&);
void lower_LRN(Lower&);
void lower_Det(Lower&);
void lower_RotaryEmbedding(Lower&);
void lower_LpPool(Lower&);
void lower_RNN(Lower&);
void lower_GRU(Lower&);
void lower_LSTM(Lower&);
void lower_DeformConv(Lower&);
void lower_MelWeightMatrix(Lower&);
// extra2.cpp
void lower_GridSample(Lower&);
void lower_AffineGrid(Lower&);
void lower_QuantizeLinear(Lower&);
void lower_DequantizeLinear(Lower&);
void lower_DynamicQuantizeLinear(Lower&);
void lower_MatMulInteger(Lower&);
void lower_QLinearMatMul(Lower&);
void lower_ConvInteger(Lower&);
void lower_QLinearConv(Lower&);
void lower_MaxUnpool(Lower&);
void lower_Col2Im(Lower&);
void lower_DFT(Lower&);
void lower_STFT(Lower&);

namespace {

double numel(const Shape& s) { return double(shape_numel(s)); }

// Conv: each output value sums over C/g x kernel; ConvTranspose: each input value spreads over Cout/g x kernel.
double conv_flops(Lower& L) {
    if (!L.has(1) || L.rank(1) < 3) return 0;
    const Shape& w = L.shape(1);
    double k = 1;
    for (size_t i = 2; i < w.size(); i++) k *= double(w[i]);
    bool conv = L.node.op_type == "Conv";
    return 2 * (conv ? numel(L.outs[0].shape) : numel(L.shape(0))) * double(w[1]) * k;
}

double matmul_flops(Lower& L) {
    if (!L.has(0) || L.rank(0) < 1) return 0;
    const Shape& a = L.shape(0);
    int64_t K = L.node.op_type == "Gemm" && L.node.get_int("transA", 0) ? a[0] : a.back();
    return 2 * numel(L.outs[0].shape) * double(K);
}

double attention_flops(Lower& L) {
    const Shape &q = L.shape(0), &k = L.shape(1), &v = L.shape(2);  // [B, T, H, D]
    return 2 * double(q[0]) * double(q[2]) * double(q[1]) * double(k[1]) * double(q[3] + v[3]);
}

const std::vector<OpDef>& table() {
    static const std::vector<OpDef> t = {
        {.op = "Add", .since = 1, .ggml = lower_Add, .host = host_Add, .math = true},
        {.op = "Sub", .since = 1, .ggml = lower_Sub, .host = host_Sub, .math = true},
        {.op = "Mul", .since = 1, .ggml = lower_Mul, .host = host_Mul, .math = true},
        {.op = "Div", .since = 1, .ggml = lower_Div, .host = host_Div, .math = true},
        {.op = "Pow", .since = 1, .ggml = lower_Pow, .host = host_Pow, .math = true},
        {.op = "Mod", .since = 10, .ggml = lower_Mod, .host = host_Mod, .math = true},
        {.op = "Sum", .since = 1, .ggml = lower_Sum, .host = host_Sum, .math = true},
        {.op = "Mean", .since = 1, .ggml = lower_Mean, .host = host_Mean, .math = true},
        {.op = "Max", .since = 1, .ggml = lower_Max, .host = host_Max, .math = true},
        {.op = "Min", .since = 1, .ggml = lower_Min, .host = host_Min, .math = true},
        {.op = "Relu", .since = 1, .ggml = lower_Relu, .host = host_Relu, .math = true},
        {.op = "Sigmoid", .since = 1, .ggml = lower_Sigmoid, .math = true},
        {.op = "onnx2ggml.SiLU", .since = 1, .ggml = lower_SiLU, .math = true},  // produced by the fuse_silu pass
        {.op = "onnx2ggml.GroupNorm", .since = 1, .ggml = lower_GroupNormFused, .math = true},  // fuse_group_norm
        {.op = "onnx2ggml.Attention", .since = 1, .ggml = lower_AttentionFused, .math = true, .flops = attention_flops},  // fuse_attention
        {.op = "onnx2ggml.Gelu", .since = 1, .ggml = lower_Gelu, .math = true},  // fuse_gelu (erf form)
        {.op = "Tanh", .since = 1, .ggml = lower_Tanh, .math = true},
        {.op = "Exp", .since = 1, .ggml = lower_Exp, .host = host_Exp, .math = true},
        {.op = "Log", .since = 1, .ggml = lower_Log, .host = host_Log, .math = true},
        {.op = "Sqrt", .since = 1, .ggml = lower_Sqrt, .host = host_Sqrt, .math = true},
        {.op = "Abs", .since = 1, .ggml = lower_Abs, .host = host_Abs, .math = true},
        {.op = "Neg", .since = 1, .ggml = lower_Neg, .host = host_Neg, .math = true},
        {.op = "Floor", .since = 1, .ggml = lower_Floor, .host = host_Floor, .math = true},
        {.op = "Ceil", .since = 1, .ggml = lower_Ceil, .host = host_Ceil, .math = true},
        {.op = "Sin", .since = 7, .ggml = lower_Sin, .math = true},
        {.op = "Cos", .since = 7, .ggml = lower_Cos, .math = true},
        {.op = "Tan", .since = 7, .ggml = lower_Tan, .math = true},
        {.op = "Asin", .since = 7, .ggml = lower_Asin, .math = true},
        {.op = "Acos", .since = 7, .ggml = lower_Acos, .math = true},
        {.op = "Atan", .since = 7, .ggml = lower_Atan, .math = true},
        {.op = "Sinh", .since = 9, .ggml = lower_Sinh, .math = true},
        {.op = "Cosh", .since = 9, .ggml = lower_Cosh, .math = true},
        {.op = "Asinh", .since = 9, .ggml = lower_Asinh, .math = true},
        {.op = "Acosh", .since = 9, .ggml = lower_Acosh, .math = true},
        {.op = "Atanh", .since = 9, .ggml = lower_Atanh, .math = true},
        {.op = "Erf", .since = 9, .ggml = lower_Erf, .math = true},
        {.op = "Reciprocal", .since = 1, .ggml = lower_Reciprocal, .host = host_Reciprocal, .math = true},
        {.op = "Round", .since = 11, .ggml = lower_Round, .host = host_Round, .math = true},
        {.op = "Sign", .since = 9, .ggml = lower_Sign, .host = host_Sign, .math = true},
        {.op = "Softsign", .since = 1, .ggml = lower_Softsign, .math = true},
        {.op = "Softplus", .since = 1, .ggml = lower_Softplus, .math = true},
        {.op = "Mish", .since = 18, .ggml = lower_Mish, .math = true},
        {.op = "HardSwish", .since = 14, .ggml = lower_HardSwish, .math = true},
        {.op = "HardSigmoid", .since = 1, .ggml = lower_HardSigmoid, .math = true},
        {.op = "LeakyRelu", .since = 1, .ggml = lower_LeakyRelu, .math = true},
        {.op = "PRelu", .since = 1, .ggml = lower_PRelu, .math = true},
        {.op = "Elu", .since = 1, .ggml = lower_Elu, .math = true},
        {.op = "Selu", .since = 1, .ggml = lower_Selu, .math = true},
        {.op = "Celu", .since = 12, .ggml = lower_Celu, .math = true},
        {.op = "ThresholdedRelu", .since = 10, .ggml = lower_ThresholdedRelu, .math = true},
        {.op = "Gelu", .since = 20, .ggml = lower_Gelu, .math = true},
        {.op = "Clip", .since = 1, .ggml = lower_Clip, .host = host_Clip, .host_inputs = {1,2}, .math = true},
        {.op = "Identity", .since = 1, .ggml = lower_Identity, .host = host_Identity},
        {.op = "IsNaN", .since = 9, .ggml = lower_IsNaN},
        {.op = "IsInf", .since = 10, .ggml = lower_IsInf},
        {.op = "Not", .since = 1, .ggml = lower_Not, .host = host_Not},
        {.op = "Equal", .since = 1, .ggml = lower_Equal, .host = host_Equal},
        {.op = "Less", .since = 1, .ggml = lower_Less, .host = host_Less},
        {.op = "LessOrEqual", .since = 12, .ggml = lower_LessOrEqual, .host = host_LessOrEqual},
        {.op = "Greater", .since = 1, .ggml = lower_Greater, .host = host_Greater},
        {.op = "GreaterOrEqual", .since = 12, .ggml = lower_GreaterOrEqual, .host = host_GreaterOrEqual},
        {.op = "And", .since = 1, .ggml = lower_And, .host = host_And},
        {.op = "Or", .since = 1, .ggml = lower_Or, .host = host_Or},
        {.op = "Xor", .since = 1, .ggml = lower_Xor, .host = host_Xor},
        {.op = "RMSNormalization", .since = 23, .ggml = lower_RMSNormalization, .math = true},
        {.op = "Attention", .since = 23, .ggml = lower_Attention, .host_inputs = {6}, .math = true},
        {.op = "NegativeLogLikelihoodLoss", .since = 12, .ggml = lower_NegativeLogLikelihoodLoss, .host_inputs = {1,2}, .math = true},
        {.op = "SoftmaxCrossEntropyLoss", .since = 12, .ggml = lower_SoftmaxCrossEntropyLoss, .host_inputs = {1,2}, .math = true},
        {.op = "Hardmax", .since = 1, .ggml = lower_Hardmax, .math = true},
        {.op = "LpNormalization", .since = 1, .ggml = lower_LpNormalization, .math = true},
        {.op = "MeanVarianceNormalization", .since = 9, .ggml = lower_MeanVarianceNormalization, .math = true},
        {.op = "Shrink", .since = 9, .ggml = lower_Shrink, .host = host_Shrink, .math = true},
        {.op = "TopK", .since = 1, .ggml = lower_TopK, .host = host_TopK, .host_inputs = {1}},
        {.op = "OneHot", .since = 9, .host = host_OneHot, .host_inputs = {0,1,2}},
        {.op = "NonZero", .since = 9, .host = host_NonZero, .host_inputs = {0}},
        {.op = "Compress", .since = 9, .ggml = lower_Compress, .host = lower_Compress, .host_inputs = {1}},
        {.op = "GatherND", .since = 11, .ggml = lower_GatherND, .host = lower_GatherND, .host_inputs = {1}},
        {.op = "ScatterND", .since = 11, .ggml = lower_ScatterND, .host = lower_ScatterND, .host_inputs = {1}},
        {.op = "ScatterElements", .since = 11, .ggml = lower_ScatterElements, .host = lower_ScatterElements, .host_inputs = {1}},
        {.op = "Scatter", .since = 9, .ggml = lower_ScatterElements, .host = lower_ScatterElements, .host_inputs = {1}},
        {.op = "Swish", .since = 24, .ggml = lower_Swish, .math = true},
        {.op = "LinearAttention", .since = 27, .ggml = lower_LinearAttention, .math = true},
        {.op = "CausalConvWithState", .since = 27, .ggml = lower_CausalConvWithState, .math = true},
        {.op = "NonMaxSuppression", .since = 10, .host = host_NonMaxSuppression, .host_inputs = {0,1,2,3,4}},
        {.op = "TensorScatter", .since = 24, .ggml = lower_TensorScatter, .host = lower_TensorScatter, .host_inputs = {2}},
        {.op = "RoiAlign", .since = 10, .ggml = lower_RoiAlign, .math = true},
        {.op = "BitCast", .since = 26, .host = host_BitCast, .host_inputs = {0}},
        {.op = "CumProd", .since = 26, .ggml = lower_CumProd, .host = host_CumProd, .host_inputs = {1}, .math = true},
        {.op = "HannWindow", .since = 17, .ggml = lower_HannWindow, .host_inputs = {0}, .math = true},
        {.op = "HammingWindow", .since = 17, .ggml = lower_HammingWindow, .host_inputs = {0}, .math = true},
        {.op = "BlackmanWindow", .since = 17, .ggml = lower_BlackmanWindow, .host_inputs = {0}, .math = true},
        {.op = "Unique", .since = 11, .host = host_Unique, .host_inputs = {0}},
        {.op = "ReverseSequence", .since = 10, .ggml = lower_ReverseSequence, .host = lower_ReverseSequence, .host_inputs = {1}},
        {.op = "CenterCropPad", .since = 18, .ggml = lower_CenterCropPad, .host = lower_CenterCropPad, .host_inputs = {1}},
        {.op = "LRN", .since = 1, .ggml = lower_LRN, .math = true},
        {.op = "Det", .since = 11, .ggml = lower_Det, .math = true},
        {.op = "RotaryEmbedding", .since = 23, .ggml = lower_RotaryEmbedding, .math = true},
        {.op = "LpPool", .since = 1, .ggml = lower_LpPool, .math = true},
        {.op = "RNN", .since = 7, .ggml = lower_RNN, .math = true},
        {.op = "GRU", .since = 7, .ggml = lower_GRU, .math = true},
        {.op = "LSTM", .since = 7, .ggml = lower_LSTM, .math = true},
        {.op = "DeformConv", .since = 19, .ggml = lower_DeformConv, .math = true},
        {.op = "MelWeightMatrix", .since = 17, .ggml = lower_MelWeightMatrix, .host_inputs = {0,1,2,3,4}, .math = true},
        {.op = "BitShift", .since = 11, .host = host_BitShift},
        {.op = "BitwiseAnd", .since = 18, .host = host_BitwiseAnd},
        {.op = "BitwiseOr", .since = 18, .host = host_BitwiseOr},
        {.op = "BitwiseXor", .since = 18, .host = host_BitwiseXor},
        {.op = "BitwiseNot", .since = 18, .host = host_BitwiseNot},
        {.op = "Where", .since = 9, .ggml = lower_Where, .host = host_Where},
        {.op = "Shape", .since = 1, .host = host_Shape, .shape_only = true},
        {.op = "Size", .since = 1, .host = host_Size, .shape_only = true},
        {.op = "Reshape", .since = 1, .ggml = lower_Reshape, .host = lower_Reshape, .host_inputs = {1}},
        {.op = "Flatten", .since = 1, .ggml = lower_Flatten, .host = lower_Flatten},
        {.op = "Squeeze", .since = 1, .ggml = lower_Squeeze, .host = lower_Squeeze, .host_inputs = {1}},
        {.op = "Unsqueeze", .since = 1, .ggml = lower_Unsqueeze, .host = lower_Unsqueeze, .host_inputs = {1}},
        {.op = "Transpose", .since = 1, .ggml = lower_Transpose, .host = host_Transpose},
        {.op = "Concat", .since = 1, .ggml = lower_Concat, .host = host_Concat},
        {.op = "Split", .since = 1, .ggml = lower_Split, .host = host_Split, .host_inputs = {1}},
        {.op = "Slice", .since = 1, .ggml = lower_Slice, .host = host_Slice, .host_inputs = {1,2,3,4}},
        {.op = "Gather", .since = 1, .ggml = lower_Gather, .host = host_Gather},
        {.op = "GatherElements", .since = 11, .ggml = lower_GatherElements, .host = host_GatherElements, .host_inputs = {1}},
        {.op = "Expand", .since = 8, .ggml = lower_Expand, .host = host_Expand, .host_inputs = {1}},
        {.op = "Tile", .since = 6, .ggml = lower_Tile, .host = host_Tile, .host_inputs = {1}},
        {.op = "Pad", .since = 1, .ggml = lower_Pad, .host = host_Pad, .host_inputs = {1,2,3}},
        {.op = "Cast", .since = 1, .ggml = lower_Cast, .host = host_Cast},
        {.op = "CastLike", .since = 15, .ggml = lower_Cast, .host = host_Cast},
        {.op = "Constant", .since = 1, .host = host_Constant},
        {.op = "ConstantOfShape", .since = 9, .host = host_ConstantOfShape, .host_inputs = {0}},
        {.op = "Range", .since = 11, .host = host_Range, .host_inputs = {0,1,2}},
        {.op = "Trilu", .since = 14, .ggml = lower_Trilu, .host = host_Trilu, .host_inputs = {1}},
        {.op = "EyeLike", .since = 9, .host = host_EyeLike},
        {.op = "Dropout", .since = 1, .ggml = lower_Dropout, .host = lower_Dropout},
        {.op = "DepthToSpace", .since = 1, .ggml = lower_DepthToSpace, .host = host_DepthToSpace},
        {.op = "SpaceToDepth", .since = 1, .ggml = lower_DepthToSpace, .host = host_DepthToSpace},
        {.op = "Conv", .since = 1, .ggml = lower_Conv, .math = true, .flops = conv_flops},
        {.op = "ConvTranspose", .since = 1, .ggml = lower_ConvTranspose, .host_inputs = {1}, .math = true, .flops = conv_flops},
        {.op = "MaxPool", .since = 1, .ggml = lower_MaxPool, .math = true},
        {.op = "AveragePool", .since = 1, .ggml = lower_AveragePool, .math = true},
        {.op = "GlobalAveragePool", .since = 1, .ggml = lower_GlobalAveragePool, .math = true},
        {.op = "GlobalMaxPool", .since = 1, .ggml = lower_GlobalMaxPool, .math = true},
        {.op = "BatchNormalization", .since = 1, .ggml = lower_BatchNormalization, .math = true},
        {.op = "InstanceNormalization", .since = 1, .ggml = lower_InstanceNormalization, .math = true},
        {.op = "GroupNormalization", .since = 18, .ggml = lower_GroupNormalization, .math = true},
        {.op = "LayerNormalization", .since = 17, .ggml = lower_LayerNormalization, .math = true},
        {.op = "Softmax", .since = 1, .ggml = lower_Softmax, .math = true},
        {.op = "LogSoftmax", .since = 1, .ggml = lower_LogSoftmax, .math = true},
        {.op = "MatMul", .since = 1, .ggml = lower_MatMul, .math = true, .flops = matmul_flops},
        {.op = "Gemm", .since = 1, .ggml = lower_Gemm, .math = true, .flops = matmul_flops},
        {.op = "Einsum", .since = 12, .ggml = lower_Einsum, .math = true},
        {.op = "Resize", .since = 10, .ggml = lower_Resize, .host_inputs = {1,2,3}, .math = true},
        {.op = "Upsample", .since = 7, .ggml = lower_Resize, .host_inputs = {1}, .math = true},
        {.op = "ReduceSum", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceMean", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceMax", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceMin", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceProd", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceL1", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceL2", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceLogSum", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceLogSumExp", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceSumSquare", .since = 1, .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ArgMax", .since = 1, .ggml = lower_ArgMax, .host = host_ArgMax},
        {.op = "ArgMin", .since = 1, .ggml = lower_ArgMin, .host = host_ArgMin},
        {.op = "If", .since = 1, .host = lower_If, .host_inputs = {0}, .control = true},
        {.op = "Loop", .since = 1, .host = lower_Loop, .host_inputs = {0, 1}, .control = true},
        {.op = "Scan", .since = 9, .host = lower_Scan, .control = true},
        {.op = "CumSum", .since = 11, .ggml = lower_CumSum, .host = host_CumSum, .host_inputs = {1}, .math = true},
        // extra2.cpp
        {.op = "GridSample", .since = 16, .ggml = lower_GridSample, .math = true},
        {.op = "AffineGrid", .since = 20, .ggml = lower_AffineGrid, .host_inputs = {1}, .math = true},
        {.op = "QuantizeLinear", .since = 10, .ggml = lower_QuantizeLinear, .math = true},
        {.op = "DequantizeLinear", .since = 10, .ggml = lower_DequantizeLinear, .math = true},
        {.op = "DynamicQuantizeLinear", .since = 11, .ggml = lower_DynamicQuantizeLinear, .math = true},
        {.op = "MatMulInteger", .since = 10, .ggml = lower_MatMulInteger, .math = true},
        {.op = "QLinearMatMul", .since = 10, .ggml = lower_QLinearMatMul, .math = true},
        {.op = "ConvInteger", .since = 10, .ggml = lower_ConvInteger, .math = true},
        {.op = "QLinearConv", .since = 10, .ggml = lower_QLinearConv, .math = true},
        {.op = "MaxUnpool", .since = 9, .ggml = lower_MaxUnpool, .host = lower_MaxUnpool, .host_inputs = {1, 2}},
        {.op = "Col2Im", .since = 18, .ggml = lower_Col2Im, .host = lower_Col2Im, .host_inputs = {1, 2}, .math = true},
        {.op = "DFT", .since = 17, .ggml = lower_DFT, .host_inputs = {1, 2}, .math = true},
        {.op = "STFT", .since = 17, .ggml = lower_STFT, .host_inputs = {1, 3}, .math = true},
    };
    return t;
}

}  // namespace

const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset) {
    if (!domain.empty() && domain != "ai.onnx") return nullptr;
    const OpDef* best = nullptr;
    for (const OpDef& d : table())
        if (op_type == d.op && d.since <= opset && (!best || d.since > best->since)) best = &d;
    return best;
}

std::vector<std::string> registered_ops() {
    std::vector<std::string> r;
    for (const OpDef& d : table())
        if (std::find(r.begin(), r.end(), d.op) == r.end()) r.push_back(d.op);
    std::sort(r.begin(), r.end());
    return r;
}

}  // namespace onnx2ggml
