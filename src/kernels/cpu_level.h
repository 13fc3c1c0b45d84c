// The x86-64 level (2, 3 or 4) our CPU kernels run at, picked once per process: the highest this CPU and its OS
// support, or a lower one named by ONNX2GGML_CPU=v2|v3|v4 (tests; a user who hits a kernel bug).
#pragma once

namespace o2g {

// 2, 3 or 4 where the build dispatches at run time; 0 where it has one kernel build (-march=native, non-x86).
int cpu_level();
// What the kernels were built for: "x86-64-v4 (AVX-512)", ..., "native", "generic".
const char* cpu_level_name();

}  // namespace o2g
