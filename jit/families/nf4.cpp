#include "jit/families/nf4.hpp"

#include <fmt/format.h>

#include "jit/families/w4a16.hpp"

namespace chord {
namespace {
KernelSource generate(const KernelDescriptor& d) { return NF4KernelConfig::from(d).source(); }
const bool kRegistered =
    register_source_generator(KernelFamily::kNF4Pack, generate) && register_source_generator(KernelFamily::kNF4Dequant, generate);
}  // namespace

KernelDescriptor NF4KernelConfig::descriptor(const Arch& arch) const {
  KernelDescriptor d;
  d.family = dequant ? KernelFamily::kNF4Dequant : KernelFamily::kNF4Pack;
  d.arch = arch;
  d.params[0] = dequant ? static_cast<int>(element) : static_cast<int>(absmax_form);
  return d;
}

NF4KernelConfig NF4KernelConfig::from(const KernelDescriptor& d) {
  NF4KernelConfig c;
  c.dequant = d.family == KernelFamily::kNF4Dequant;
  if (c.dequant) {
    c.element = static_cast<NF4Element>(d.params[0]);
  } else {
    c.absmax_form = static_cast<NF4AbsmaxForm>(d.params[0]);
  }
  return c;
}

KernelSource NF4KernelConfig::source() const {
  if (dequant) {
    return w4a16_pack_kernel_source(fmt::format("nf4_dequant_{}", element == kNF4FP16 ? "fp16" : "bf16"),
                                    "NF4DequantArgs",
                                    fmt::format("chord::nf4_dequant_body<{}>", static_cast<int>(element)));
  }
  return w4a16_pack_kernel_source(fmt::format("nf4_pack_{}", absmax_form == kNF4AbsmaxNested ? "nested" : "fp32"),
                                  "NF4PackArgs", fmt::format("chord::nf4_pack_body<{}>", static_cast<int>(absmax_form)));
}

}  // namespace chord
