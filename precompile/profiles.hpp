// Named sets of kernel descriptors that `chord precompile --profile NAME` compiles ahead
// of time, so that a server's first request does not wait for NVRTC.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_descriptor.hpp"

namespace chord {

std::vector<std::string> profile_names();

// One line saying what a profile compiles (for `chord precompile --help`); throws as
// profile_descriptors does for an unknown name.
std::string profile_summary(const std::string& name);

// Throws Error(CHORD_ERROR_INVALID_ARGUMENT) listing the known names for an unknown one.
std::vector<KernelDescriptor> profile_descriptors(const std::string& name, const Arch& arch);

}  // namespace chord
