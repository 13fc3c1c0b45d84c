// In-memory ONNX model: see include/onnx2ggml/ir.h.
#pragma once
#include "onnx2ggml/ir.h"
