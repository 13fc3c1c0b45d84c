// Structure-aware mutation of serialized ONNX models for the session fuzzer: the protobuf is parsed into a
// tree of fields (ONNX's message schema, as far as the mutations need it), one field is changed, and the tree
// is written back.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

// Mutates `model` in place (op types, attributes, dims, initializer sizes and types, external-data fields,
// node wiring, opsets). Returns false when the bytes are not a parseable protobuf, so the caller can fall back
// to byte-level mutation.
bool mutate_model(std::string& model, uint32_t seed);

}  // namespace fuzz
