// `onnx2ggml compile`: writes a model as a standalone C++ ggml program (sources, CMake, GGUF weights).
#pragma once
#include <map>
#include <string>

#include "ir/ir.h"
#include "onnx2ggml/tensor.h"

namespace onnx2ggml {

struct CompileOptions {
    std::string out_dir;
    std::string name;                // program name; default: model file stem, sanitized
    // Example data for inputs the graph reads when it builds (a reshape target, axes), by input name: the first probe
    // build uses it where made-up data (zeros, ones) does not fit the graph. The program still reads those inputs.
    std::map<std::string, Tensor> examples;
};

// Returns the program name used.
std::string compile_model(const Model& m, const CompileOptions& opts);

// Writes only the weights GGUF compile would write (the same tensors under the same names, so that a compiled
// program of a model with these initializers loads it), plus any float initializer the program does not read as is.
void write_weights_gguf(const Model& m, const std::string& path);

// Helpers shared with tests: a safe C++ identifier, string literal and comment text.
std::string c_identifier(const std::string& s);
std::string c_string(const std::string& s);
std::string c_comment(const std::string& s);
// One INT64 or FLOAT value of shape {} or {1} in its short form (o2g::host_i64(0), o2g::host_f32(x, {1})); "" else.
std::string scalar_literal(DType t, const std::string& shape, const std::string& value);

}  // namespace onnx2ggml
