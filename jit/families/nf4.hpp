// Kernel families of NF4 weights: pack (bitsandbytes QuantState -> packed NF4 layout) and
// dequantize (packed -> BF16 / FP16), kernels_src/w4a16_pack.cuh. The NF4 GEMM is the W4A16
// family with weight format NF4 (jit/families/w4a16.hpp).
#pragma once
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"
#include "kernels_src/nf4_args.cuh"

namespace chord {

struct NF4KernelConfig {
  bool dequant = false;                     // packed -> T instead of QuantState -> packed
  NF4AbsmaxForm absmax_form = kNF4AbsmaxNested;  // pack only
  NF4Element element = kNF4BF16;            // dequant only

  KernelDescriptor descriptor(const Arch& arch) const;
  static NF4KernelConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

}  // namespace chord
