#include "reference/w4a16_pack.hpp"

#include <stdexcept>

#include "kernels_src/weight_kind_args.cuh"
#include "reference/bf16.hpp"
#include "reference/nf4_reference.hpp"

namespace chord::ref {
namespace {

// Mirrors w4a16_detail::frag_row / frag_col / scale_pos_in_16 (kernels_src/w4a16_layout.cuh).
int frag_row(int lane, int slot) { return (lane >> 2) + 8 * ((slot & 3) & 1); }
int frag_col(int lane, int slot) { return 2 * (lane & 3) + 8 * ((slot & 3) >> 1) + (slot >> 2); }
int scale_pos_in_16(int r) { return 2 * (r & 7) + (r >> 3); }

void check_shape(int num_experts, int n, int k, int group = 32) {
  if (num_experts < 0 || n <= 0 || k <= 0 || n % 16 != 0 || k % 64 != 0)
    throw std::invalid_argument("w4a16 packed layout needs N % 16 == 0 and K % 64 == 0");
  if (group != 32 && group != 128) throw std::invalid_argument("w4a16 scale group must be 32 or 128");
  if (k % group != 0) throw std::invalid_argument("w4a16 group-128 scales need K % 128 == 0");
}

uint16_t dequant(uint32_t code, uint16_t scale) {
  // (code - 8) is exact in bf16; one bf16 multiply.
  return bf16_mul(float_to_bf16(static_cast<float>(static_cast<int>(code) - 8)), scale);
}

}  // namespace

std::vector<uint32_t> pack_w4a16_words(const uint8_t* codes, int num_experts, int n, int k) {
  check_shape(num_experts, n, k);
  std::vector<uint32_t> weight(static_cast<size_t>(num_experts) * n * k / 8);
  size_t w = 0;
  for (int e = 0; e < num_experts; ++e)
    for (int nt = 0; nt < n / 16; ++nt)
      for (int kc = 0; kc < k / 64; ++kc)
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < 4; ++j, ++w) {
            uint32_t q = 0;
            for (int s = 0; s < 8; ++s) {
              const size_t row = static_cast<size_t>(e) * n + nt * 16 + frag_row(lane, s);
              const int col = (kc * 4 + j) * 16 + frag_col(lane, s);
              q |= static_cast<uint32_t>(codes[row * k + col] & 15u) << (4 * s);
            }
            weight[w] = q;
          }
  return weight;
}

uint32_t packed_code(const uint32_t* weight, int n, int k, int e, int row, int col) {
  const int nt = row / 16, r = row % 16, kt = col / 16, c = col % 16;
  const int kc = kt / 4, j = kt % 4;
  // Find (lane, slot) with frag_row == r and frag_col == c.
  const int g = r & 7, t = (c & 7) >> 1;
  const int lane = g * 4 + t;
  const int slot = ((r >> 3) | ((c >> 3) << 1)) + 4 * (c & 1);
  const size_t word = ((((static_cast<size_t>(e) * (n / 16) + nt) * (k / 64) + kc) * 32 + lane) * 4) + j;
  return (weight[word] >> (4 * slot)) & 15u;
}

int packed_scale_column(int row) { return (row & ~15) + scale_pos_in_16(row & 15); }

W4A16Packed pack_w4a16(const uint8_t* codes, const uint16_t* scales, int num_experts, int n, int k, int group) {
  check_shape(num_experts, n, k, group);
  W4A16Packed p;
  p.num_experts = num_experts;
  p.n = n;
  p.k = k;
  p.group = group;
  p.weight = pack_w4a16_words(codes, num_experts, n, k);
  const int groups = k / group;
  p.scales.resize(static_cast<size_t>(num_experts) * n * groups);
  for (int e = 0; e < num_experts; ++e)
    for (int grp = 0; grp < groups; ++grp)
      for (int row = 0; row < n; ++row)
        p.scales[(static_cast<size_t>(e) * groups + grp) * n + packed_scale_column(row)] =
            scales[(static_cast<size_t>(e) * n + row) * groups + grp];
  return p;
}

uint16_t dequantize_packed_element(const uint32_t* weight, const uint16_t* scales, int n, int k, int e, int row,
                                   int col, int group) {
  const uint32_t code = packed_code(weight, n, k, e, row, col);
  const uint16_t s = scales[(static_cast<size_t>(e) * (k / group) + col / group) * n + packed_scale_column(row)];
  return dequant(code, s);
}

std::vector<uint16_t> dequantize_packed(const uint32_t* weight, const uint16_t* scales, int num_experts, int n,
                                        int k, int group) {
  check_shape(num_experts, n, k, group);
  std::vector<uint16_t> out(static_cast<size_t>(num_experts) * n * k);
  for (int e = 0; e < num_experts; ++e)
    for (int row = 0; row < n; ++row)
      for (int col = 0; col < k; ++col)
        out[(static_cast<size_t>(e) * n + row) * k + col] =
            dequantize_packed_element(weight, scales, n, k, e, row, col, group);
  return out;
}

std::vector<uint16_t> dequantize_packed(const W4A16Packed& p) {
  return dequantize_packed(p.weight.data(), p.scales.data(), p.num_experts, p.n, p.k, p.group);
}

W4A16PackedZp pack_w4a16_zp(const uint8_t* codes, const uint16_t* scales, const uint8_t* zero_points,
                            int num_experts, int n, int k, bool fp16, int group) {
  check_shape(num_experts, n, k, group);
  W4A16PackedZp p;
  p.num_experts = num_experts;
  p.n = n;
  p.k = k;
  p.fp16 = fp16;
  p.group = group;
  p.weight = pack_w4a16_words(codes, num_experts, n, k);
  const int groups = k / group;
  p.pairs.resize(static_cast<size_t>(num_experts) * n * groups);
  const int elem = fp16 ? kNF4FP16 : kNF4BF16;
  for (int e = 0; e < num_experts; ++e)
    for (int grp = 0; grp < groups; ++grp)
      for (int row = 0; row < n; ++row) {
        const size_t src = (static_cast<size_t>(e) * n + row) * groups + grp;
        p.pairs[(static_cast<size_t>(e) * groups + grp) * n + packed_scale_column(row)] =
            scales[src] | (int4_zp_bias(elem, zero_points[src]) << 16);
      }
  return p;
}

std::vector<uint16_t> dequantize_packed_zp(const W4A16PackedZp& p) {
  const int n = p.n, k = p.k;
  std::vector<uint16_t> out(static_cast<size_t>(p.num_experts) * n * k);
  const float magic = p.fp16 ? 1024.0f : 128.0f;
  for (int e = 0; e < p.num_experts; ++e)
    for (int row = 0; row < n; ++row)
      for (int col = 0; col < k; ++col) {
        const uint32_t code = packed_code(p.weight.data(), n, k, e, row, col);
        const uint32_t pair =
            p.pairs[(static_cast<size_t>(e) * (k / p.group) + col / p.group) * n + packed_scale_column(row)];
        const uint16_t s = static_cast<uint16_t>(pair & 0xffffu), bias = static_cast<uint16_t>(pair >> 16);
        // (M + code) and the bias are integers of T; their sum is exact in fp32 and in T.
        const float x = (magic + static_cast<float>(code)) + (p.fp16 ? fp16_to_float(bias) : bf16_to_float(bias));
        out[(static_cast<size_t>(e) * n + row) * k + col] =
            p.fp16 ? float_to_fp16(x * fp16_to_float(s)) : float_to_bf16(x * bf16_to_float(s));
      }
  return out;
}

}  // namespace chord::ref
