// 16-bit float helpers for NVRTC without cuda_bf16.h / cuda_fp16.h: values travel as raw
// 16-bit patterns. ELEM numbers the type as CHORD_DTYPE_* and NF4Element do: 0 BF16, 1 FP16.
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

// One 16-bit value of type ELEM as FP32 (exact).
template <int ELEM>
__device__ __forceinline__ float half_bits_to_float(unsigned short bits) {
  if constexpr (ELEM == 1) {
    float value;
    asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
    return value;
  } else {
    return bf16_bits_to_float(bits);
  }
}

// Two FP32 values -> one register of two ELEM (lo in bits 0..15), round to nearest even.
template <int ELEM>
__device__ __forceinline__ unsigned int pack_half2(float lo, float hi) {
  unsigned int d;
  if constexpr (ELEM == 1) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  }
  return d;
}

}  // namespace chord
