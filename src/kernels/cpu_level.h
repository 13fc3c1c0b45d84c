// The x86-64 level (2, 3 or 4) our CPU kernels run at, picked once per process: the highest this CPU and its OS
// support, or a lower one named by ONNX2GGML_CPU=v2|v3|v4 (tests; a user who hits a kernel bug).
#pragma once

namespace o2g {

// 2, 3 or 4 on x86-64 (what the dispatched kernels and ggml's CPU code per level run at); 0 on other CPUs.
int cpu_level();
// What the kernels run as: "x86-64-v4 (AVX-512)", ..., or their one build (-march=native, other CPUs).
const char* cpu_level_name();

}  // namespace o2g
