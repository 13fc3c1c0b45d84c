// ONNX element types: see include/onnx2ggml/dtype.h.
#pragma once
#include "onnx2ggml/dtype.h"
