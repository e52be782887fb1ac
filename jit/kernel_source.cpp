#include "jit/kernel_source.hpp"

#include <fmt/format.h>

#include "jit/error.hpp"
#include "jit/families/activation.hpp"
#include "jit/families/int4_dequant.hpp"
#include "jit/families/nf4.hpp"
#include "jit/families/routing_check.hpp"
#include "jit/families/w4a16.hpp"

namespace chord {

std::string kernel_meta_definition(const KernelMeta& meta) {
  return fmt::format("\nextern \"C\" __constant__ unsigned int chord_kernel_meta[4] = {{{}u, {}u, {}u, 0u}};\n",
                     meta.threads, meta.shared_bytes, meta.cluster_size);
}

KernelSource generate_kernel_source(const KernelDescriptor& descriptor) {
  switch (descriptor.family) {
    case KernelFamily::kInt4Dequant: return Int4DequantConfig::from(descriptor).source();
    case KernelFamily::kW4A16Gemm: return W4A16GemmConfig::from(descriptor).source();
    case KernelFamily::kW4A16Pack:
    case KernelFamily::kW4A16Unpack: return W4A16PackConfig::from(descriptor).source();
    case KernelFamily::kRoutingCheck: return RoutingCheckConfig{}.source();
    case KernelFamily::kNF4Pack:
    case KernelFamily::kNF4Dequant: return NF4KernelConfig::from(descriptor).source();
    case KernelFamily::kActivation: return ActivationConfig::from(descriptor).source();
  }
  fail(CHORD_ERROR_INTERNAL, "no source generator for kernel family {}", static_cast<int>(descriptor.family));
}

}  // namespace chord
