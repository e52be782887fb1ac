// INT4 group-32 dequantize: out = (code - 8) * scale, the product rounded to BF16.
// One thread turns 8 codes (one 32-bit word of the compressed form) into one 16-byte store.
#pragma once
#include "int4_dequant_args.cuh"
#include "ptx.cuh"

namespace chord {

template <int FORMAT>
__device__ __forceinline__ unsigned int load_eight_codes(const Int4DequantArgs& args, long long word) {
  if (FORMAT == kInt4Compressed) {
    return static_cast<const unsigned int*>(args.weight)[word];
  }
  // Eight bytes -> eight nibbles, element j in bits 4j..4j+3 like the compressed form.
  uint2 bytes = static_cast<const uint2*>(args.weight)[word];
  unsigned int packed = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    packed |= ((bytes.x >> (8 * j)) & 0xfu) << (4 * j);
    packed |= ((bytes.y >> (8 * j)) & 0xfu) << (4 * (j + 4));
  }
  return packed;
}

template <int FORMAT>
__device__ __forceinline__ void int4_dequant_body(const Int4DequantArgs& args) {
  const long long words_per_row = args.k / 8;
  const long long total = args.rows * words_per_row;
  const unsigned short* scales = static_cast<const unsigned short*>(args.scales);
  for (long long word = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; word < total;
       word += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = word / words_per_row;
    const int group = static_cast<int>(word % words_per_row) / 4;
    const unsigned int codes = load_eight_codes<FORMAT>(args, word);
    const float scale = ptx::bf16_bits_to_float(scales[row * (args.k / 32) + group]);
    unsigned int out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // (code - 8) is exact and (code - 8) * scale is exact in FP32: one rounding to BF16.
      const float lo = static_cast<float>(static_cast<int>((codes >> (8 * j)) & 0xfu) - 8) * scale;
      const float hi = static_cast<float>(static_cast<int>((codes >> (8 * j + 4)) & 0xfu) - 8) * scale;
      out[j] = ptx::pack_bf16x2(lo, hi);
    }
    static_cast<uint4*>(args.out)[word] = make_uint4(out[0], out[1], out[2], out[3]);
  }
}

}  // namespace chord
