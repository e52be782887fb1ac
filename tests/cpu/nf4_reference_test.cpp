// The NF4 reference (bitsandbytes format): code table and thresholds, the nested code table,
// quantize / dequantize arithmetic, double quantization, FP16 rounding and the packed layout.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "reference/bf16.hpp"
#include "reference/nf4_reference.hpp"
#include "reference/w4a16_pack.hpp"

using namespace chord::ref;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::vector<float> normal_values(size_t count, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace

TEST_CASE("nf4: code table, thresholds and NaN", "[nf4]") {
  CHECK(kNF4Table[0] == -1.0f);
  CHECK(kNF4Table[7] == 0.0f);
  CHECK(kNF4Table[15] == 1.0f);
  CHECK(bits_of(kNF4Table[1]) == bits_of(-0.6961928009986877f));
  CHECK(bits_of(kNF4Table[8]) == bits_of(0.07958029955625534f));
  for (int c = 0; c < 16; ++c) {
    CHECK(nf4_code(kNF4Table[c]) == c);
    if (c > 0) CHECK(kNF4Table[c] > kNF4Table[c - 1]);
  }
  // Thresholds are exclusive: the threshold itself belongs to the lower code.
  CHECK(nf4_code(0.03979014977812767f) == 7);
  CHECK(nf4_code(std::nextafter(0.03979014977812767f, 1.0f)) == 8);
  CHECK(nf4_code(-0.8480964004993439f) == 0);
  CHECK(nf4_code(std::nextafter(-0.8480964004993439f, 0.0f)) == 1);
  CHECK(nf4_code(0.8614784181118011f) == 14);
  CHECK(nf4_code(2.0f) == 15);
  CHECK(nf4_code(-2.0f) == 0);
  CHECK(nf4_code(std::numeric_limits<float>::quiet_NaN()) == 0);
}

TEST_CASE("nf4: nested code table is bitsandbytes' signed dynamic map", "[nf4]") {
  const std::vector<float> m = dynamic_map_signed();
  REQUIRE(m.size() == 256);
  for (size_t i = 1; i < m.size(); ++i) CHECK(m[i] >= m[i - 1]);
  // Entries of create_dynamic_map(signed=True) as torch computes it (float32 bit patterns).
  CHECK(bits_of(m[0]) == 0xbf7e3333u);
  CHECK(bits_of(m[1]) == 0xbf7a999au);
  CHECK(bits_of(m[2]) == 0xbf770000u);
  CHECK(bits_of(m[100]) == 0xbbf4bc6au);
  CHECK(bits_of(m[126]) == 0xb513a3b7u);
  CHECK(bits_of(m[127]) == 0u);
  CHECK(bits_of(m[128]) == 0x3513a3b7u);
  CHECK(bits_of(m[129]) == 0x365a1a94u);
  CHECK(bits_of(m[200]) == 0x3e6f3333u);
  CHECK(bits_of(m[254]) == 0x3f7e3333u);
  CHECK(bits_of(m[255]) == 0x3f800000u);
  // The 8-bit search returns the nearest entry.
  for (int i = 0; i < 256; ++i) CHECK(dynamic_code(m.data(), m[i]) == (i == 127 ? 127 : i));
  CHECK(dynamic_code(m.data(), 1.0f) == 255);
  CHECK(dynamic_code(m.data(), -1.0f) == 0);
  CHECK(dynamic_code(m.data(), 0.0f) == 127);
  const float between = 0.5f * (m[200] + m[201]);
  CHECK(dynamic_code(m.data(), std::nextafter(between, 0.0f)) == 200);
  CHECK(dynamic_code(m.data(), std::nextafter(between, 1.0f)) == 201);
}

TEST_CASE("nf4: quantize a known block, high nibble first", "[nf4]") {
  // One 64-block holding every table value times 0.5 (absmax 0.5 comes from the -0.5).
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 0.5f * kNF4Table[i % 16];
  NF4QuantState s = nf4_quantize(x.data(), 1, 1, 64, /*double_quant=*/false);
  REQUIRE(!s.nested);
  REQUIRE(s.absmax.size() == 1);
  CHECK(s.absmax[0] == 0.5f);
  REQUIRE(s.packed.size() == 32);
  CHECK(s.packed[0] == 0x01);  // elements 0 (code 0) and 1 (code 1)
  CHECK(s.packed[7] == 0xef);  // elements 14, 15
  const std::vector<uint16_t> bf = nf4_dequantize(s, NF4Float::kBF16);
  const std::vector<uint16_t> hf = nf4_dequantize(s, NF4Float::kFP16);
  const std::vector<float> ff = nf4_dequantize_fp32(s);
  for (int i = 0; i < 64; ++i) {
    const float want = kNF4Table[i % 16] * 0.5f;  // exact: a power-of-two scale
    CHECK(ff[i] == want);
    CHECK(bf[i] == float_to_bf16(want));
    CHECK(hf[i] == float_to_fp16(want));
  }
  // A product that rounds: 0.7229568362236023 * 3 in FP32, then to BF16 once.
  CHECK(nf4_dequantize_value(14, 3.0f, NF4Float::kBF16) == float_to_bf16(kNF4Table[14] * 3.0f));
  CHECK(nf4_dequantize_value(14, 3.0f, NF4Float::kBF16) == 0x400b);  // 2.1688705 -> 2.171875
}

TEST_CASE("nf4: an all-zero block gives code 0 and absmax 0 (dequantizes to -0)", "[nf4]") {
  std::vector<float> x(128, 0.0f);
  for (int i = 64; i < 128; ++i) x[i] = 1.0f;
  NF4QuantState s = nf4_quantize(x.data(), 1, 1, 128, false);
  CHECK(s.absmax[0] == 0.0f);
  CHECK(s.absmax[1] == 1.0f);
  CHECK(s.packed[0] == 0x00);
  CHECK(s.packed[32] == 0xff);
  const std::vector<uint16_t> bf = nf4_dequantize(s, NF4Float::kBF16);
  CHECK(bf[0] == 0x8000);
  CHECK(bf[64] == 0x3f80);
}

TEST_CASE("nf4: round trip error is within half a code step of each block", "[nf4]") {
  const int64_t e = 2, n = 8, k = 256;
  const std::vector<float> x = normal_values(e * n * k, 11);
  NF4QuantState s = nf4_quantize(x.data(), e, n, k, false);
  const std::vector<float> y = nf4_dequantize_fp32(s);
  float max_gap = 0;
  for (int c = 1; c < 16; ++c) max_gap = std::max(max_gap, kNF4Table[c] - kNF4Table[c - 1]);
  for (int64_t b = 0; b < s.blocks(); ++b) {
    float m = 0;
    for (int j = 0; j < 64; ++j) m = std::max(m, std::fabs(x[b * 64 + j]));
    CHECK(s.absmax[b] == m);
    for (int j = 0; j < 64; ++j) {
      const int64_t i = b * 64 + j;
      CHECK(std::fabs(y[i] - x[i]) <= 0.5f * max_gap * m * 1.0001f);
      // The chosen code is the nearest table value (ties aside).
      const float xn = x[i] / m;
      const uint32_t code = (i & 1) ? s.packed[i / 2] & 15 : s.packed[i / 2] >> 4;
      for (int c = 0; c < 16; ++c) CHECK(std::fabs(kNF4Table[code] - xn) <= std::fabs(kNF4Table[c] - xn) + 1e-6f);
    }
  }
}

TEST_CASE("nf4: double quantization of the absmax", "[nf4]") {
  // 2 x 96 x 256 = 768 absmax values: three nested blocks, the last one full; blocks of
  // varied scale so the nested quantization has something to do.
  const int64_t e = 2, n = 96, k = 256;
  std::vector<float> x = normal_values(e * n * k, 5);
  for (int64_t i = 0; i < e * n * k; ++i) x[i] *= 1.0f + static_cast<float>((i / 64) % 7);
  NF4QuantState plain = nf4_quantize(x.data(), e, n, k, false);
  NF4QuantState nested = nf4_quantize(x.data(), e, n, k, true);
  REQUIRE(nested.nested);
  CHECK(nested.packed == plain.packed);  // codes depend on the true absmax only
  REQUIRE(nested.absmax_q.size() == 768);
  REQUIRE(nested.absmax2.size() == 3);
  REQUIRE(nested.code2 == dynamic_map_signed());
  double mean = 0;
  for (float v : plain.absmax) mean += v;
  CHECK(nested.offset == static_cast<float>(mean / 768));

  const std::vector<float> resolved = nf4_resolve_absmax(nested);
  for (int64_t b = 0; b < 768; ++b) {
    // Each resolved value is exactly code2[q] * absmax2 (FP32) + offset (FP32) ...
    const float prod = nested.code2[nested.absmax_q[b]] * nested.absmax2[b / 256];
    CHECK(bits_of(resolved[b]) == bits_of(prod + nested.offset));
    // ... and close to the true absmax (8-bit dynamic code: within 1% of the block's range).
    CHECK(std::fabs(resolved[b] - plain.absmax[b]) <= 0.01f * nested.absmax2[b / 256] + 1e-7f);
  }
  // Dequantize uses the resolved absmax: FP32 product, one rounding.
  const std::vector<uint16_t> bf = nf4_dequantize(nested, NF4Float::kBF16);
  for (int64_t i = 0; i < e * n * k; i += 37) {
    const uint32_t code = (i & 1) ? nested.packed[i / 2] & 15 : nested.packed[i / 2] >> 4;
    CHECK(bf[i] == float_to_bf16(kNF4Table[code] * resolved[i / 64]));
  }
}

TEST_CASE("nf4: hand-made nested state resolves with two FP32 roundings", "[nf4]") {
  NF4QuantState s;
  s.num_experts = 1;
  s.n = 1;
  s.k = 128;
  s.packed.assign(64, 0xf0);  // codes 15, 0, 15, 0, ...
  s.nested = true;
  s.code2 = dynamic_map_signed();
  s.absmax_q = {255, 129};
  s.absmax2 = {0.3f};
  s.offset = 0.1f;
  const std::vector<float> a = nf4_resolve_absmax(s);
  const float a1 = s.code2[129] * 0.3f;
  CHECK(bits_of(a[0]) == bits_of(0.3f + 0.1f));
  CHECK(bits_of(a[1]) == bits_of(a1 + 0.1f));
  const std::vector<uint16_t> hf = nf4_dequantize(s, NF4Float::kFP16);
  CHECK(hf[0] == float_to_fp16(a[0]));
  CHECK(hf[1] == float_to_fp16(-a[0]));
  CHECK(hf[64] == float_to_fp16(a[1]));
}

TEST_CASE("nf4: FP16 rounding", "[nf4]") {
  CHECK(float_to_fp16(1.0f) == 0x3c00);
  CHECK(float_to_fp16(-2.0f) == 0xc000);
  CHECK(float_to_fp16(65504.0f) == 0x7bff);
  CHECK(float_to_fp16(65519.0f) == 0x7bff);
  CHECK(float_to_fp16(65520.0f) == 0x7c00);
  CHECK(float_to_fp16(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);       // tie to even
  CHECK(float_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);       // 1.5 units: tie to even
  CHECK(float_to_fp16(std::ldexp(1023.5f, -24)) == 0x0400);    // rounds up into the normals
  CHECK(float_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie to even
  CHECK(float_to_fp16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    CHECK(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h))) == h);
    CHECK(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h | 0x8000))) == (h | 0x8000));
  }
}

TEST_CASE("nf4: packed layout v2 nibble order", "[nf4]") {
  // Byte p = fragment register p: low nibble its low element (INT4 slot p), high nibble its
  // high element (INT4 slot p + 4).
  CHECK(nf4_word_from_int4_order(0x76543210u) == 0x73625140u);
  CHECK(int4_order_from_nf4_word(0x73625140u) == 0x76543210u);
  for (uint32_t q : {0u, 0xffffffffu, 0x12345678u, 0x9abcdef0u, 0x0f0f00f0u})
    CHECK(int4_order_from_nf4_word(nf4_word_from_int4_order(q)) == q);
}

TEST_CASE("nf4: packed layout shares INT4's word order and dequantizes like the state", "[nf4]") {
  const int64_t e = 2, n = 32, k = 192;
  const std::vector<float> x = normal_values(e * n * k, 3);
  for (bool dq : {false, true}) {
    NF4QuantState s = nf4_quantize(x.data(), e, n, k, dq);
    NF4Packed p = pack_nf4(s);
    // Same words as the INT4 packer given the NF4 codes, in the NF4 nibble order.
    std::vector<uint8_t> codes(e * n * k);
    for (int64_t i = 0; i < e * n * k; ++i) codes[i] = (i & 1) ? s.packed[i / 2] & 15 : s.packed[i / 2] >> 4;
    std::vector<uint16_t> dummy(e * n * k / 32, 0);
    std::vector<uint32_t> int4_words = pack_w4a16(codes.data(), dummy.data(), e, n, k).weight;
    for (uint32_t& q : int4_words) q = nf4_word_from_int4_order(q);
    CHECK(p.weight == int4_words);
    // Absmax [E, K/64, N], row r of each 16 at 2 (r % 8) + r / 8.
    const std::vector<float> a = nf4_resolve_absmax(s);
    CHECK(p.absmax[0] == a[0]);                      // e 0, row 0, block 0
    CHECK(p.absmax[2] == a[1 * (k / 64)]);           // row 1 sits at column 2
    CHECK(p.absmax[1] == a[8 * (k / 64)]);           // row 8 sits at column 1
    CHECK(p.absmax[n + 17] == a[24 * (k / 64) + 1]);  // block 1, row 24 -> 16 + 2*0 + 1
    CHECK(p.absmax[(k / 64) * n] == a[n * (k / 64)]);  // expert 1, row 0
    for (NF4Float t : {NF4Float::kBF16, NF4Float::kFP16}) CHECK(dequantize_nf4_packed(p, t) == nf4_dequantize(s, t));
  }
  std::vector<float> small(8 * 64, 0.5f);
  NF4QuantState n8 = nf4_quantize(small.data(), 1, 8, 64, false);  // N = 8 is a legal state
  CHECK_THROWS_AS(pack_nf4(n8), std::invalid_argument);            // but not a packed layout
  CHECK_THROWS_AS(nf4_quantize(small.data(), 1, 4, 96, false), std::invalid_argument);
}
