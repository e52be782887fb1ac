// Descriptor -> the instantiation text NVRTC compiles. Each family lives in jit/families/
// and turns its config into a small source that includes the embedded headers and
// defines `chord_entry` plus the `chord_kernel_meta` the launcher reads from the cubin.
#pragma once
#include <string>
#include <vector>

#include "jit/cubin_info.hpp"
#include "jit/kernel_descriptor.hpp"

namespace chord {

struct KernelSource {
  std::string name;                  // readable, e.g. "int4_dequant_compressed_t256"
  std::string text;
  std::vector<std::string> options;  // family-specific NVRTC options
};

KernelSource generate_kernel_source(const KernelDescriptor& descriptor);

// The metadata line every generated source ends with.
std::string kernel_meta_definition(const KernelMeta& meta);

}  // namespace chord
