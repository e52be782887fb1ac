#include "jit/kernel_source.hpp"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "core/error.hpp"

namespace chord {

std::string kernel_meta_definition(const KernelMeta& meta) {
  return fmt::format("\nextern \"C\" __constant__ unsigned int chord_kernel_meta[4] = {{{}u, {}u, {}u, 0u}};\n",
                     meta.threads, meta.shared_bytes, meta.cluster_size);
}

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<int32_t, SourceGenerator>& registry() {
  static std::unordered_map<int32_t, SourceGenerator> generators;
  return generators;
}

}  // namespace

bool register_source_generator(KernelFamily family, SourceGenerator generator) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[static_cast<int32_t>(family)] = generator;
  return true;
}

KernelSource generate_kernel_source(const KernelDescriptor& descriptor) {
  SourceGenerator generator = nullptr;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(static_cast<int32_t>(descriptor.family));
    if (it != registry().end()) generator = it->second;
  }
  if (generator == nullptr) {
    fail(CHORD_ERROR_INTERNAL, "no source generator for kernel family {}", static_cast<int>(descriptor.family));
  }
  return generator(descriptor);
}

std::string entry_point_source(const std::string& header, const std::string& launch_bounds,
                               const std::string& args_type, const std::string& body) {
  return fmt::format(
      "#include \"{}\"\n\nextern \"C\" __global__ void __launch_bounds__({}) chord_entry(const __grid_constant__ "
      "chord::{} args) {{\n  {}(args);\n}}\n",
      header, launch_bounds, args_type, body);
}

}  // namespace chord
