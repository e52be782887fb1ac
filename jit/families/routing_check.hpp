// Kernel family: device-side validation of W4A16 routing tensors (kernels_src/routing_check.cuh).
#pragma once
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"

namespace chord {

struct RoutingCheckConfig {
  static constexpr int kThreads = 256;
  KernelDescriptor descriptor(const Arch& arch) const;
  KernelSource source() const;
};

}  // namespace chord
