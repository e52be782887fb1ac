// Named sets of kernel descriptors that `chord precompile --profile NAME` compiles ahead
// of time, so that a server's first request does not wait for NVRTC.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_descriptor.hpp"

namespace chord {

std::vector<std::string> profile_names();

// Throws Error(CHORD_ERROR_INVALID_ARGUMENT) listing the known names for an unknown one.
std::vector<KernelDescriptor> profile_descriptors(const std::string& name, const Arch& arch);

}  // namespace chord
