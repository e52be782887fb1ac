// BF16 helpers for NVRTC without cuda_bf16.h: BF16 values travel as raw 16-bit patterns.
#pragma once

namespace chord {

__device__ __forceinline__ float bf16_bits_to_float(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned int>(bits) << 16);
}

// Round to nearest even, as the tensor cores and bitsandbytes do.
__device__ __forceinline__ unsigned short float_to_bf16_bits(float value) {
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}

// Two floats -> one register of two BF16 (lo in the low half).
__device__ __forceinline__ unsigned int pack_bf16x2(float lo, float hi) {
  unsigned int packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
}

}  // namespace chord
