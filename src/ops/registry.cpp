// The op table: every family file (src/ops/<family>.cpp) ends with its own table of rows; this collects them.
// Adding an op touches its family file (lowering and row), the op library, a test case and scripts/regenerate.py
// (docs/adding-an-op.md); the fuzzer and `onnx2ggml ops` read registered_ops().
#include <algorithm>

#include "ops/op.h"

namespace onnx2ggml {

const std::vector<OpDef>& activation_ops();
const std::vector<OpDef>& attention_ops();
const std::vector<OpDef>& cast_ops();
const std::vector<OpDef>& constants_ops();
const std::vector<OpDef>& contrib_attention_ops();
const std::vector<OpDef>& control_flow_ops();
const std::vector<OpDef>& conv_ops();
const std::vector<OpDef>& detection_ops();
const std::vector<OpDef>& indexing_ops();
const std::vector<OpDef>& linalg_ops();
const std::vector<OpDef>& loss_ops();
const std::vector<OpDef>& math_ops();
const std::vector<OpDef>& matmul_ops();
const std::vector<OpDef>& movement_ops();
const std::vector<OpDef>& normalization_ops();
const std::vector<OpDef>& pool_ops();
const std::vector<OpDef>& quantize_ops();
const std::vector<OpDef>& recurrent_ops();
const std::vector<OpDef>& reduction_ops();
const std::vector<OpDef>& resize_ops();
const std::vector<OpDef>& selection_ops();
const std::vector<OpDef>& sequence_ops();
const std::vector<OpDef>& shape_ops();
const std::vector<OpDef>& signal_ops();

namespace {

const std::vector<const std::vector<OpDef>*>& tables() {
    static const std::vector<const std::vector<OpDef>*> t = {
        &activation_ops(),
        &attention_ops(),
        &cast_ops(),
        &constants_ops(),
        &contrib_attention_ops(),
        &control_flow_ops(),
        &conv_ops(),
        &detection_ops(),
        &indexing_ops(),
        &linalg_ops(),
        &loss_ops(),
        &math_ops(),
        &matmul_ops(),
        &movement_ops(),
        &normalization_ops(),
        &pool_ops(),
        &quantize_ops(),
        &recurrent_ops(),
        &reduction_ops(),
        &resize_ops(),
        &selection_ops(),
        &sequence_ops(),
        &shape_ops(),
        &signal_ops(),
    };
    return t;
}

}  // namespace

const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset) {
    const std::string dom = domain == "ai.onnx" ? "" : domain;
    if (!dom.empty() && opset <= 0) opset = 1;  // contrib domains carry one version; some files omit its import
    const OpDef* best = nullptr;
    for (const auto* table : tables())
        for (const OpDef& d : *table)
            if (op_type == d.op && dom == d.domain && d.since <= opset && (!best || d.since > best->since)) best = &d;
    return best;
}

std::vector<std::string> registered_ops() {
    std::vector<std::string> r;
    for (const auto* table : tables())
        for (const OpDef& d : *table)
            if (std::string name = *d.domain ? std::string(d.domain) + ":" + d.op : d.op;
                std::find(r.begin(), r.end(), name) == r.end())
                r.push_back(name);
    std::sort(r.begin(), r.end());
    return r;
}

}  // namespace onnx2ggml
