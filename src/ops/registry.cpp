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

// op type, since opset, ggml lowering, host evaluation, inputs needed on the host, computes floats
const std::vector<OpDef>& table() {
    static const std::vector<OpDef> t = {
        {"Add", 1, lower_Add, host_Add, {}, true},
        {"Sub", 1, lower_Sub, host_Sub, {}, true},
        {"Mul", 1, lower_Mul, host_Mul, {}, true},
        {"Div", 1, lower_Div, host_Div, {}, true},
        {"Pow", 1, lower_Pow, host_Pow, {}, true},
        {"Mod", 10, lower_Mod, host_Mod, {}, true},
        {"Sum", 1, lower_Sum, host_Sum, {}, true},
        {"Mean", 1, lower_Mean, host_Mean, {}, true},
        {"Max", 1, lower_Max, host_Max, {}, true},
        {"Min", 1, lower_Min, host_Min, {}, true},
        {"Relu", 1, lower_Relu, host_Relu, {}, true},
        {"Sigmoid", 1, lower_Sigmoid, nullptr, {}, true},
        {"onnx2ggml.SiLU", 1, lower_SiLU, nullptr, {}, true},  // produced by the fuse_silu pass
        {"onnx2ggml.GroupNorm", 1, lower_GroupNormFused, nullptr, {}, true},  // fuse_group_norm
        {"onnx2ggml.Attention", 1, lower_AttentionFused, nullptr, {}, true},  // fuse_attention
        {"onnx2ggml.Gelu", 1, lower_Gelu, nullptr, {}, true},  // fuse_gelu (erf form)
        {"Tanh", 1, lower_Tanh, nullptr, {}, true},
        {"Exp", 1, lower_Exp, host_Exp, {}, true},
        {"Log", 1, lower_Log, host_Log, {}, true},
        {"Sqrt", 1, lower_Sqrt, host_Sqrt, {}, true},
        {"Abs", 1, lower_Abs, host_Abs, {}, true},
        {"Neg", 1, lower_Neg, host_Neg, {}, true},
        {"Floor", 1, lower_Floor, host_Floor, {}, true},
        {"Ceil", 1, lower_Ceil, host_Ceil, {}, true},
        {"Sin", 7, lower_Sin, nullptr, {}, true},
        {"Cos", 7, lower_Cos, nullptr, {}, true},
        {"Tan", 7, lower_Tan, nullptr, {}, true},
        {"Asin", 7, lower_Asin, nullptr, {}, true},
        {"Acos", 7, lower_Acos, nullptr, {}, true},
        {"Atan", 7, lower_Atan, nullptr, {}, true},
        {"Sinh", 9, lower_Sinh, nullptr, {}, true},
        {"Cosh", 9, lower_Cosh, nullptr, {}, true},
        {"Asinh", 9, lower_Asinh, nullptr, {}, true},
        {"Acosh", 9, lower_Acosh, nullptr, {}, true},
        {"Atanh", 9, lower_Atanh, nullptr, {}, true},
        {"Erf", 9, lower_Erf, nullptr, {}, true},
        {"Reciprocal", 1, lower_Reciprocal, host_Reciprocal, {}, true},
        {"Round", 11, lower_Round, host_Round, {}, true},
        {"Sign", 9, lower_Sign, host_Sign, {}, true},
        {"Softsign", 1, lower_Softsign, nullptr, {}, true},
        {"Softplus", 1, lower_Softplus, nullptr, {}, true},
        {"Mish", 18, lower_Mish, nullptr, {}, true},
        {"HardSwish", 14, lower_HardSwish, nullptr, {}, true},
        {"HardSigmoid", 1, lower_HardSigmoid, nullptr, {}, true},
        {"LeakyRelu", 1, lower_LeakyRelu, nullptr, {}, true},
        {"PRelu", 1, lower_PRelu, nullptr, {}, true},
        {"Elu", 1, lower_Elu, nullptr, {}, true},
        {"Selu", 1, lower_Selu, nullptr, {}, true},
        {"Celu", 12, lower_Celu, nullptr, {}, true},
        {"ThresholdedRelu", 10, lower_ThresholdedRelu, nullptr, {}, true},
        {"Gelu", 20, lower_Gelu, nullptr, {}, true},
        {"Clip", 1, lower_Clip, host_Clip, {1,2}, true},
        {"Identity", 1, lower_Identity, host_Identity, {}, false},
        {"IsNaN", 9, lower_IsNaN, nullptr, {}, false},
        {"IsInf", 10, lower_IsInf, nullptr, {}, false},
        {"Not", 1, lower_Not, host_Not, {}, false},
        {"Equal", 1, lower_Equal, host_Equal, {}, false},
        {"Less", 1, lower_Less, host_Less, {}, false},
        {"LessOrEqual", 12, lower_LessOrEqual, host_LessOrEqual, {}, false},
        {"Greater", 1, lower_Greater, host_Greater, {}, false},
        {"GreaterOrEqual", 12, lower_GreaterOrEqual, host_GreaterOrEqual, {}, false},
        {"And", 1, lower_And, host_And, {}, false},
        {"Or", 1, lower_Or, host_Or, {}, false},
        {"Xor", 1, lower_Xor, host_Xor, {}, false},
        {"RMSNormalization", 23, lower_RMSNormalization, nullptr, {}, true},
        {"Attention", 23, lower_Attention, nullptr, {6}, true},
        {"NegativeLogLikelihoodLoss", 12, lower_NegativeLogLikelihoodLoss, nullptr, {1,2}, true},
        {"SoftmaxCrossEntropyLoss", 12, lower_SoftmaxCrossEntropyLoss, nullptr, {1,2}, true},
        {"Hardmax", 1, lower_Hardmax, nullptr, {}, true},
        {"LpNormalization", 1, lower_LpNormalization, nullptr, {}, true},
        {"MeanVarianceNormalization", 9, lower_MeanVarianceNormalization, nullptr, {}, true},
        {"Shrink", 9, lower_Shrink, host_Shrink, {}, true},
        {"TopK", 1, lower_TopK, host_TopK, {1}, false},
        {"OneHot", 9, nullptr, host_OneHot, {0,1,2}, false},
        {"NonZero", 9, nullptr, host_NonZero, {0}, false},
        {"Compress", 9, lower_Compress, lower_Compress, {1}, false},
        {"GatherND", 11, lower_GatherND, lower_GatherND, {1}, false},
        {"ScatterND", 11, lower_ScatterND, lower_ScatterND, {1}, false},
        {"ScatterElements", 11, lower_ScatterElements, lower_ScatterElements, {1}, false},
        {"Scatter", 9, lower_ScatterElements, lower_ScatterElements, {1}, false},
        {"Swish", 24, lower_Swish, nullptr, {}, true},
        {"LinearAttention", 27, lower_LinearAttention, nullptr, {}, true},
        {"CausalConvWithState", 27, lower_CausalConvWithState, nullptr, {}, true},
        {"NonMaxSuppression", 10, nullptr, host_NonMaxSuppression, {0,1,2,3,4}, false},
        {"TensorScatter", 24, lower_TensorScatter, lower_TensorScatter, {2}, false},
        {"RoiAlign", 10, lower_RoiAlign, nullptr, {}, true},
        {"BitCast", 26, nullptr, host_BitCast, {0}, false},
        {"CumProd", 26, lower_CumProd, host_CumProd, {1}, true},
        {"HannWindow", 17, lower_HannWindow, nullptr, {0}, true},
        {"HammingWindow", 17, lower_HammingWindow, nullptr, {0}, true},
        {"BlackmanWindow", 17, lower_BlackmanWindow, nullptr, {0}, true},
        {"Unique", 11, nullptr, host_Unique, {0}, false},
        {"ReverseSequence", 10, lower_ReverseSequence, lower_ReverseSequence, {1}, false},
        {"CenterCropPad", 18, lower_CenterCropPad, lower_CenterCropPad, {1}, false},
        {"LRN", 1, lower_LRN, nullptr, {}, true},
        {"Det", 11, lower_Det, nullptr, {}, true},
        {"RotaryEmbedding", 23, lower_RotaryEmbedding, nullptr, {}, true},
        {"LpPool", 1, lower_LpPool, nullptr, {}, true},
        {"RNN", 7, lower_RNN, nullptr, {}, true},
        {"GRU", 7, lower_GRU, nullptr, {}, true},
        {"LSTM", 7, lower_LSTM, nullptr, {}, true},
        {"DeformConv", 19, lower_DeformConv, nullptr, {}, true},
        {"MelWeightMatrix", 17, lower_MelWeightMatrix, nullptr, {0,1,2,3,4}, true},
        {"BitShift", 11, nullptr, host_BitShift, {}, false},
        {"BitwiseAnd", 18, nullptr, host_BitwiseAnd, {}, false},
        {"BitwiseOr", 18, nullptr, host_BitwiseOr, {}, false},
        {"BitwiseXor", 18, nullptr, host_BitwiseXor, {}, false},
        {"BitwiseNot", 18, nullptr, host_BitwiseNot, {}, false},
        {"Where", 9, lower_Where, host_Where, {}, false},
        {"Shape", 1, nullptr, host_Shape, {}, false, true},
        {"Size", 1, nullptr, host_Size, {}, false, true},
        {"Reshape", 1, lower_Reshape, lower_Reshape, {1}, false},
        {"Flatten", 1, lower_Flatten, lower_Flatten, {}, false},
        {"Squeeze", 1, lower_Squeeze, lower_Squeeze, {1}, false},
        {"Unsqueeze", 1, lower_Unsqueeze, lower_Unsqueeze, {1}, false},
        {"Transpose", 1, lower_Transpose, host_Transpose, {}, false},
        {"Concat", 1, lower_Concat, host_Concat, {}, false},
        {"Split", 1, lower_Split, host_Split, {1}, false},
        {"Slice", 1, lower_Slice, host_Slice, {1,2,3,4}, false},
        {"Gather", 1, lower_Gather, host_Gather, {}, false},
        {"GatherElements", 11, lower_GatherElements, host_GatherElements, {1}, false},
        {"Expand", 8, lower_Expand, host_Expand, {1}, false},
        {"Tile", 6, lower_Tile, host_Tile, {1}, false},
        {"Pad", 1, lower_Pad, host_Pad, {1,2,3}, false},
        {"Cast", 1, lower_Cast, host_Cast, {}, false},
        {"CastLike", 15, lower_Cast, host_Cast, {}, false},
        {"Constant", 1, nullptr, host_Constant, {}, false},
        {"ConstantOfShape", 9, nullptr, host_ConstantOfShape, {0}, false},
        {"Range", 11, nullptr, host_Range, {0,1,2}, false},
        {"Trilu", 14, lower_Trilu, host_Trilu, {1}, false},
        {"EyeLike", 9, nullptr, host_EyeLike, {}, false},
        {"Dropout", 1, lower_Dropout, lower_Dropout, {}, false},
        {"DepthToSpace", 1, lower_DepthToSpace, host_DepthToSpace, {}, false},
        {"SpaceToDepth", 1, lower_DepthToSpace, host_DepthToSpace, {}, false},
        {"Conv", 1, lower_Conv, nullptr, {}, true},
        {"ConvTranspose", 1, lower_ConvTranspose, nullptr, {1}, true},
        {"MaxPool", 1, lower_MaxPool, nullptr, {}, true},
        {"AveragePool", 1, lower_AveragePool, nullptr, {}, true},
        {"GlobalAveragePool", 1, lower_GlobalAveragePool, nullptr, {}, true},
        {"GlobalMaxPool", 1, lower_GlobalMaxPool, nullptr, {}, true},
        {"BatchNormalization", 1, lower_BatchNormalization, nullptr, {}, true},
        {"InstanceNormalization", 1, lower_InstanceNormalization, nullptr, {}, true},
        {"GroupNormalization", 18, lower_GroupNormalization, nullptr, {}, true},
        {"LayerNormalization", 17, lower_LayerNormalization, nullptr, {}, true},
        {"Softmax", 1, lower_Softmax, nullptr, {}, true},
        {"LogSoftmax", 1, lower_LogSoftmax, nullptr, {}, true},
        {"MatMul", 1, lower_MatMul, nullptr, {}, true},
        {"Gemm", 1, lower_Gemm, nullptr, {}, true},
        {"Einsum", 12, lower_Einsum, nullptr, {}, true},
        {"Resize", 10, lower_Resize, nullptr, {1,2,3}, true},
        {"Upsample", 7, lower_Resize, nullptr, {1}, true},
        {"ReduceSum", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceMean", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceMax", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceMin", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceProd", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceL1", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceL2", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceLogSum", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceLogSumExp", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ReduceSumSquare", 1, lower_Reduce, host_Reduce, {1}, true},
        {"ArgMax", 1, lower_ArgMax, host_ArgMax, {}, false},
        {"ArgMin", 1, lower_ArgMin, host_ArgMin, {}, false},
        {"If", 1, nullptr, lower_If, {0}, false, false, true},
        {"Loop", 1, nullptr, lower_Loop, {0, 1}, false, false, true},
        {"Scan", 9, nullptr, lower_Scan, {}, false, false, true},
        {"CumSum", 11, lower_CumSum, host_CumSum, {1}, true},
        // extra2.cpp
        {"GridSample", 16, lower_GridSample, nullptr, {}, true},
        {"AffineGrid", 20, lower_AffineGrid, nullptr, {1}, true},
        {"QuantizeLinear", 10, lower_QuantizeLinear, nullptr, {}, true},
        {"DequantizeLinear", 10, lower_DequantizeLinear, nullptr, {}, true},
        {"DynamicQuantizeLinear", 11, lower_DynamicQuantizeLinear, nullptr, {}, true},
        {"MatMulInteger", 10, lower_MatMulInteger, nullptr, {}, true},
        {"QLinearMatMul", 10, lower_QLinearMatMul, nullptr, {}, true},
        {"ConvInteger", 10, lower_ConvInteger, nullptr, {}, true},
        {"QLinearConv", 10, lower_QLinearConv, nullptr, {}, true},
        {"MaxUnpool", 9, lower_MaxUnpool, lower_MaxUnpool, {1, 2}, false},
        {"Col2Im", 18, lower_Col2Im, lower_Col2Im, {1, 2}, true},
        {"DFT", 17, lower_DFT, nullptr, {1, 2}, true},
        {"STFT", 17, lower_STFT, nullptr, {1, 3}, true},
    };
    return t;
}

}  // namespace

const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset) {
    if (!domain.empty() && domain != "ai.onnx") return nullptr;
    const OpDef* best = nullptr;
    for (const OpDef& d : table())
        if (op_type == d.op_type && d.since <= opset && (!best || d.since > best->since)) best = &d;
    return best;
}

std::vector<std::string> registered_ops() {
    std::vector<std::string> r;
    for (const OpDef& d : table())
        if (std::find(r.begin(), r.end(), d.op_type) == r.end()) r.push_back(d.op_type);
    std::sort(r.begin(), r.end());
    return r;
}

}  // namespace onnx2ggml
