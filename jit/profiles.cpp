#include "jit/profiles.hpp"

#include "jit/error.hpp"
#include "jit/families/int4_dequant.hpp"

namespace chord {
namespace {

std::vector<KernelDescriptor> dequant_kernels(const Arch& arch) {
  std::vector<KernelDescriptor> out;
  for (Int4SourceFormat format : {kInt4Codes, kInt4Compressed}) {
    Int4DequantConfig config;
    config.format = format;
    out.push_back(config.descriptor(arch));
  }
  return out;
}

}  // namespace

std::vector<std::string> profile_names() { return {"dequant", "all"}; }

std::vector<KernelDescriptor> profile_descriptors(const std::string& name, const Arch& arch) {
  if (name == "dequant" || name == "all") return dequant_kernels(arch);
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  fail(CHORD_ERROR_INVALID_ARGUMENT, "unknown profile '{}'; known profiles: {}", name, known);
}

}  // namespace chord
