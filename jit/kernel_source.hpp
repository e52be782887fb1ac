// Descriptor -> the instantiation text NVRTC compiles. Each family lives in jit/families/
// and turns its config into a small source that includes the embedded headers and
// defines `chord_entry` plus the `chord_kernel_meta` the launcher reads from the cubin.
#pragma once
#include <string>
#include <vector>

#include "core/cubin_info.hpp"
#include "jit/kernel_descriptor.hpp"

namespace chord {

struct KernelSource {
  std::string name;                  // readable, e.g. "int4_dequant_compressed_t256"
  std::string text;
  std::vector<std::string> options;  // family-specific NVRTC options
};

// The family's generator for `descriptor` (see register_source_generator).
KernelSource generate_kernel_source(const KernelDescriptor& descriptor);

// Each family registers its generator from its own file, so adding a family touches no
// central list. Returns true, for use as a static initializer.
using SourceGenerator = KernelSource (*)(const KernelDescriptor&);
bool register_source_generator(KernelFamily family, SourceGenerator generator);

// The `chord_entry` kernel of a generated source: includes `header`, takes chord::<args_type>
// as a grid constant and calls `body(args)`. `launch_bounds` is the text inside
// __launch_bounds__(), e.g. "256" or "384, 1".
std::string entry_point_source(const std::string& header, const std::string& launch_bounds,
                               const std::string& args_type, const std::string& body);

// The metadata line every generated source ends with.
std::string kernel_meta_definition(const KernelMeta& meta);

}  // namespace chord
