// C++ reference of the w4a16 packed layout v1 (docs/packed_layout.md): packer bit-identical to
// the GPU pack kernel (kernels_src/w4a16_pack.cuh), dequantization. The checkpoint forms are in reference/int4_reference.hpp.
#pragma once
#include <cstdint>
#include <vector>

namespace chord::ref {

struct W4A16Packed {
  std::vector<uint32_t> weight;  // E * N * K / 8 words
  std::vector<uint16_t> scales;  // bf16 [E, K/group, N], rows permuted within 16
  int num_experts = 0, n = 0, k = 0;
  int group = 32;                // k per scale: 32, or 128 (CHORD_FORMAT_INT4_G128*)
};

// The packed weight words alone (codes uint8 [E, N, K], low nibble read): the fragment order
// every 4-bit format shares (INT4 here, NF4 in reference/nf4_reference.hpp).
std::vector<uint32_t> pack_w4a16_words(const uint8_t* codes, int num_experts, int n, int k);
// Code of logical element (e, row, col), read from packed words.
uint32_t packed_code(const uint32_t* weight, int n, int k, int e, int row, int col);
// Column of weight row `row` inside one packed scale row (rows permuted within 16).
int packed_scale_column(int row);

// codes uint8 [E, N, K] + bf16 scales [E, N, K/group] -> packed. Requires N % 16 == 0, K % 64 == 0
// (group 128: K % 128 == 0).
W4A16Packed pack_w4a16(const uint8_t* codes, const uint16_t* scales, int num_experts, int n, int k, int group = 32);

// Logical weight bf16 [E, N, K]: bf16((code - 8) * scale), from the packed form (from codes:
// reference/int4_reference.hpp dequantize_codes).
std::vector<uint16_t> dequantize_packed(const W4A16Packed& packed);
std::vector<uint16_t> dequantize_packed(const uint32_t* weight, const uint16_t* scales, int num_experts, int n,
                                        int k, int group = 32);
// One element of the logical weight, read from the packed form.
uint16_t dequantize_packed_element(const uint32_t* weight, const uint16_t* scales, int n, int k, int e, int row,
                                   int col, int group = 32);

// Zero points (formats CHORD_FORMAT_INT4_G32_ZP / _ZP_FP16): the same words; the scales
// become 32-bit {lo: scale, hi: -(M + zp)} entries in T (bf16, or fp16 with `fp16`), in the
// same order. zero_points uint8 [E, N, K/group], 0..15 (group 32, or 128: CHORD_FORMAT_INT4_G128_ZP*).
struct W4A16PackedZp {
  std::vector<uint32_t> weight;
  std::vector<uint32_t> pairs;  // [E, K/group, N], rows permuted within 16
  int num_experts = 0, n = 0, k = 0;
  bool fp16 = false;
  int group = 32;
};
W4A16PackedZp pack_w4a16_zp(const uint8_t* codes, const uint16_t* scales, const uint8_t* zero_points,
                            int num_experts, int n, int k, bool fp16, int group = 32);
// The logical weight from the packed form with the kernels' arithmetic: (M + code) + bias in
// T (exact), then one rounding of the product with the scale.
std::vector<uint16_t> dequantize_packed_zp(const W4A16PackedZp& packed);

}  // namespace chord::ref
