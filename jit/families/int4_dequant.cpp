#include "jit/families/int4_dequant.hpp"

#include <fmt/format.h>

namespace chord {
namespace {
const bool kRegistered = register_source_generator(
    KernelFamily::kInt4Dequant, [](const KernelDescriptor& d) { return Int4DequantConfig::from(d).source(); });
}  // namespace

KernelDescriptor Int4DequantConfig::descriptor(const Arch& arch) const {
  KernelDescriptor d;
  d.family = KernelFamily::kInt4Dequant;
  d.arch = arch;
  d.params[0] = format;
  d.params[1] = threads;
  return d;
}

Int4DequantConfig Int4DequantConfig::from(const KernelDescriptor& d) {
  Int4DequantConfig c;
  c.format = static_cast<Int4SourceFormat>(d.params[0]);
  c.threads = d.params[1];
  return c;
}

KernelSource Int4DequantConfig::source() const {
  KernelSource s;
  s.name = fmt::format("int4_dequant_{}_t{}", format == kInt4Codes ? "codes" : "compressed", threads);
  s.text = entry_point_source("int4_dequant.cuh", std::to_string(threads), "Int4DequantArgs",
                              fmt::format("chord::int4_dequant_body<{}>", static_cast<int>(format)));
  s.text += kernel_meta_definition(KernelMeta{static_cast<uint32_t>(threads), 0, 1});
  return s;
}

}  // namespace chord
