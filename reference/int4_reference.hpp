// CPU reference for INT4 group-32 weights (the contract of ARCHITECTURE.md).
#pragma once
#include <cstdint>
#include <vector>

namespace chord::ref {

// compressed-tensors int32 [rows, K/8] -> one code per byte [rows, K]
// (element j of each group of 8 in bits 4j..4j+3).
std::vector<uint8_t> compressed_to_codes(const std::vector<int32_t>& packed, int64_t rows, int64_t k);

// codes [rows, K] -> compressed-tensors int32 [rows, K/8]
std::vector<int32_t> codes_to_compressed(const std::vector<uint8_t>& codes, int64_t rows, int64_t k);

// out[r][k] = T((code - 8) * scale[r][k/32]), one rounding; scales are T bits [rows, K/32];
// T = bf16, or fp16 with `fp16`.
std::vector<uint16_t> dequantize_codes(const std::vector<uint8_t>& codes, const std::vector<uint16_t>& scales,
                                       int64_t rows, int64_t k, bool fp16 = false);

// Zero points: out[r][k] = T((code - zp[r][k/32]) * scale[r][k/32]), the difference exact, one
// rounding; zero_points uint8 [rows, K/32] (0..15).
std::vector<uint16_t> dequantize_codes_zp(const std::vector<uint8_t>& codes, const std::vector<uint16_t>& scales,
                                          const std::vector<uint8_t>& zero_points, int64_t rows, int64_t k,
                                          bool fp16 = false);

}  // namespace chord::ref
