// Kernel family: INT4 group-32 -> BF16 dequantize (kernels_src/int4_dequant.cuh).
#pragma once
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"
#include "kernels_src/int4_dequant_args.cuh"

namespace chord {

struct Int4DequantConfig {
  Int4SourceFormat format = kInt4Compressed;
  int threads = 256;

  KernelDescriptor descriptor(const Arch& arch) const;
  static Int4DequantConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

}  // namespace chord
