#include "reference/int4_reference.hpp"

#include "reference/bf16.hpp"
#include "reference/nf4_reference.hpp"

namespace chord::ref {

std::vector<uint8_t> compressed_to_codes(const std::vector<int32_t>& packed, int64_t rows, int64_t k) {
  std::vector<uint8_t> codes(static_cast<size_t>(rows * k));
  for (int64_t i = 0; i < rows * k; ++i) {
    uint32_t word = static_cast<uint32_t>(packed[static_cast<size_t>(i / 8)]);
    codes[static_cast<size_t>(i)] = static_cast<uint8_t>((word >> (4 * (i % 8))) & 0xf);
  }
  return codes;
}

std::vector<int32_t> codes_to_compressed(const std::vector<uint8_t>& codes, int64_t rows, int64_t k) {
  std::vector<int32_t> packed(static_cast<size_t>(rows * k / 8), 0);
  for (int64_t i = 0; i < rows * k; ++i) {
    uint32_t nibble = codes[static_cast<size_t>(i)] & 0xfu;
    packed[static_cast<size_t>(i / 8)] |= static_cast<int32_t>(nibble << (4 * (i % 8)));
  }
  return packed;
}

std::vector<uint16_t> dequantize_codes(const std::vector<uint8_t>& codes, const std::vector<uint16_t>& scales,
                                       int64_t rows, int64_t k, bool fp16) {
  std::vector<uint16_t> out(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      float value = static_cast<float>(static_cast<int>(codes[static_cast<size_t>(r * k + c)] & 0xf) - 8);
      const uint16_t s = scales[static_cast<size_t>(r * (k / 32) + c / 32)];
      // The product is exact in fp32 (4 + 11 significant bits at most): one rounding, to T.
      out[static_cast<size_t>(r * k + c)] =
          fp16 ? float_to_fp16(value * fp16_to_float(s)) : float_to_bf16(value * bf16_to_float(s));
    }
  }
  return out;
}

std::vector<uint16_t> dequantize_codes_zp(const std::vector<uint8_t>& codes, const std::vector<uint16_t>& scales,
                                          const std::vector<uint8_t>& zero_points, int64_t rows, int64_t k,
                                          bool fp16) {
  std::vector<uint16_t> out(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const size_t grp = static_cast<size_t>(r * (k / 32) + c / 32);
      const float value = static_cast<float>(static_cast<int>(codes[static_cast<size_t>(r * k + c)] & 0xf) -
                                             static_cast<int>(zero_points[grp] & 0xf));
      const uint16_t s = scales[grp];
      // As above: the product is exact in fp32, rounded once to T.
      out[static_cast<size_t>(r * k + c)] =
          fp16 ? float_to_fp16(value * fp16_to_float(s)) : float_to_bf16(value * bf16_to_float(s));
    }
  }
  return out;
}

}  // namespace chord::ref
