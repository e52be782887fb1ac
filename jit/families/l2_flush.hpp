// Kernel family: the L2 eviction read before each timed launch of the decode tile search
// (kernels_src/l2_flush.cuh).
#pragma once
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"

namespace chord {

struct L2FlushConfig {
  static constexpr int kThreads = 256;
  KernelDescriptor descriptor(const Arch& arch) const;
  KernelSource source() const;
};

}  // namespace chord
