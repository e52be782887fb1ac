// Kernel families of the W4A16 grouped GEMM (kernels_src/w4a16_gemm.cuh) and of its
// weight pack / unpack kernels (kernels_src/w4a16_pack.cuh).
#pragma once
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"
#include "kernels_src/w4a16_args.cuh"

namespace chord {

struct W4A16GemmConfig {
  W4A16Mode mode = kW4A16Contiguous;
  int block_m = 64;
  int block_n = 128;
  int block_k = 128;
  int stages = 4;
  int warps_m = 1;
  int warps_n = 4;

  int threads() const { return w4a16_threads(warps_m, warps_n); }
  int smem_bytes() const { return w4a16_smem_bytes(block_m, block_n, block_k, stages); }
  // Why the config is invalid (nullptr when valid).
  const char* error() const { return w4a16_config_error(block_m, block_n, block_k, stages, warps_m, warps_n); }

  KernelDescriptor descriptor(const Arch& arch) const;
  static W4A16GemmConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

struct W4A16PackConfig {
  bool unpack = false;                         // packed -> bf16 instead of checkpoint -> packed
  W4A16PackSource source_format = kW4A16SrcCompressed;

  KernelDescriptor descriptor(const Arch& arch) const;
  static W4A16PackConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

}  // namespace chord
