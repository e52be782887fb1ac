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

}  // namespace chord
