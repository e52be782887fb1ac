// BF16 <-> FP32 on the host, rounding as the hardware does (round to nearest even).
// Used by the CPU reference implementations and tests.
#pragma once
#include <cstdint>
#include <cstring>

namespace chord::ref {

inline float bf16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// One BF16 multiply: exact product in FP32 (8x8-bit mantissas fit), one rounding to BF16.
inline uint16_t bf16_mul(uint16_t a, uint16_t b) {
  return float_to_bf16(bf16_to_float(a) * bf16_to_float(b));
}

}  // namespace chord::ref
