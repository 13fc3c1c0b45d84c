// The CPU level our kernels were compiled for. With run-time dispatch (CMake ONNX2GGML_CPU_DISPATCH), each kernel
// file is compiled once per x86-64 level inside its own namespace (o2g::isa_v2, isa_v3, isa_v4), and
// kernels/dispatch.cpp forwards the o2g:: entry points to the level picked at start-up (kernels/cpu_level.h).
// Without it (-march=native builds, other CPUs) the entry points are defined directly in o2g::.
#pragma once

#if defined(O2G_ISA)
#define O2G_ISA_BEGIN namespace O2G_ISA {
#define O2G_ISA_END }
#else
#define O2G_ISA_BEGIN
#define O2G_ISA_END
#endif
