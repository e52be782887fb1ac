// Kernel sets: named lists of kernel descriptors that `chord precompile --profile NAME`
// compiles ahead of time, so that a server's first request does not wait for NVRTC. One set per
// split of shapes/suite.json marked kernel_set (its GEMMs, from the file), "dequant", and "all".
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_descriptor.hpp"

namespace chord {

std::vector<std::string> kernel_set_names();

// One line saying what a set compiles (for `chord precompile --help`); throws as
// kernel_set_descriptors does for an unknown name.
std::string kernel_set_summary(const std::string& name);

// Throws Error(CHORD_ERROR_INVALID_ARGUMENT) listing the known names for an unknown one.
std::vector<KernelDescriptor> kernel_set_descriptors(const std::string& name, const Arch& arch);

// One MoE layer as one GPU holds it, for a model outside the suite: its local experts, hidden
// size and expert intermediate size on this GPU (after expert and tensor parallel splits). Its
// GEMMs are gate_up [N = 2 x intermediate, K = hidden] and down [N = hidden, K = intermediate].
struct MoeLayerShape {
  int experts = 0, hidden = 0, intermediate = 0;
  int top_k = 8;        // routes per token
  int sm_count = 132;   // the GPU's SMs (the decode grids' split-K depends on them)
  bool nf4 = false;     // also the NF4 kernels (bitsandbytes checkpoints)
};

// What a kernel set compiles (every INT4 kind in every mode, pack and routing-check kernels,
// NF4 when asked), for `shape` (`chord precompile --moe E,HIDDEN,INTERMEDIATE`), with the
// offsets and indexed decode kernels at every batch a server captures (1, 2, 4, multiples of 8
// up to 512, then powers of two to 4096 tokens) routed top_k. Throws
// Error(CHORD_ERROR_INVALID_ARGUMENT) naming a shape the operators cannot run.
std::vector<KernelDescriptor> moe_kernel_descriptors(const MoeLayerShape& shape, const Arch& arch);

}  // namespace chord
