#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <tuple>
#include <type_traits>

#include "kernels_src/w4a16_wgmma_args.cuh"
#include "kernels_src/weight_kind_args.cuh"
#include "reference/bf16.hpp"
#include "reference/int4_reference.hpp"
#include "reference/nf4_reference.hpp"
#include "reference/w4a16_gemm.hpp"
#include "reference/w4a16_pack.hpp"

using namespace chord::ref;

TEST_CASE("reference: bf16 rounding is round-to-nearest-even", "[reference]") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1.0).
  CHECK(float_to_bf16(1.00390625f) == 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: ties go up to even.
  CHECK(float_to_bf16(1.01171875f) == 0x3f82);
  CHECK(float_to_bf16(-2.0f) == 0xc000);
}

TEST_CASE("reference: dequantize is (code - 8) * scale with one BF16 rounding", "[reference]") {
  const int64_t k = 64;
  std::vector<uint8_t> codes(k);
  for (int i = 0; i < k; ++i) codes[i] = static_cast<uint8_t>(i % 16);
  std::vector<uint16_t> scales = {float_to_bf16(0.5f), float_to_bf16(3.0f)};
  auto out = dequantize_codes(codes, scales, 1, k);
  CHECK(bf16_to_float(out[0]) == -4.0f);   // (0 - 8) * 0.5
  CHECK(bf16_to_float(out[8]) == 0.0f);    // (8 - 8) * 0.5
  CHECK(bf16_to_float(out[15]) == 3.5f);   // (15 - 8) * 0.5
  CHECK(bf16_to_float(out[32]) == -24.0f); // (0 - 8) * 3
  // A product that needs rounding: 7 * 1.0078125 = 7.0546875 -> bf16 7.0625 (RNE).
  std::vector<uint16_t> odd_scale = {0x3f81, 0x3f81};
  std::vector<uint8_t> fifteen(k, 15);
  auto rounded = dequantize_codes(fifteen, odd_scale, 1, k);
  CHECK(rounded[0] == float_to_bf16(7.0f * 1.0078125f));
  CHECK(bf16_to_float(rounded[0]) == 7.0625f);
}

TEST_CASE("reference: compressed-tensors int32 form round-trips with codes", "[reference]") {
  std::mt19937 rng(7);
  const int64_t rows = 5, k = 96;
  std::vector<uint8_t> codes(rows * k);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 16);
  auto packed = codes_to_compressed(codes, rows, k);
  REQUIRE(packed.size() == static_cast<size_t>(rows * k / 8));
  CHECK(compressed_to_codes(packed, rows, k) == codes);
  // Element j of each group of 8 sits in bits 4j..4j+3, least significant first.
  std::vector<uint8_t> ramp = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(static_cast<uint32_t>(codes_to_compressed(ramp, 1, 8)[0]) == 0x87654321u);
}

TEST_CASE("reference: the packer puts each code where docs/packed_layout.md says, and pack then dequantize round-trips",
          "[reference]") {
  std::mt19937 rng(13);
  for (auto [e, n, k] : {std::tuple{1, 16, 64}, std::tuple{2, 48, 192}}) {
    std::vector<uint8_t> codes(static_cast<size_t>(e) * n * k);
    for (auto& c : codes) c = static_cast<uint8_t>(rng() & 0xf);
    std::vector<uint16_t> scales(static_cast<size_t>(e) * n * (k / 32));
    for (auto& s : scales) s = float_to_bf16(std::ldexp(1.0f + (rng() % 128) / 128.0f, static_cast<int>(rng() % 9) - 6));
    const W4A16Packed packed = pack_w4a16(codes.data(), scales.data(), e, n, k);
    REQUIRE(packed.weight.size() == codes.size() / 8);
    size_t misplaced = 0;
    for (int x = 0; x < e; ++x)
      for (int row = 0; row < n; ++row)
        for (int col = 0; col < k; ++col) {
          // The documented word and nibble slot of (row, col), written out independently.
          const int nt = row / 16, r = row % 16, kc = col / 64, j = (col % 64) / 16, c = col % 16;
          const int lane = (r % 8) * 4 + (c % 8) / 2;
          const int slot = (r / 8) + 2 * (c / 8) + 4 * (c % 2);
          const size_t word = ((((size_t)x * (n / 16) + nt) * (k / 64) + kc) * 32 + lane) * 4 + j;
          const uint32_t code = (packed.weight[word] >> (4 * slot)) & 0xf;
          misplaced += code != codes[((size_t)x * n + row) * k + col];
        }
    CHECK(misplaced == 0);
    CHECK(dequantize_packed(packed) == dequantize_codes(codes, scales, static_cast<int64_t>(e) * n, k));
  }
}

TEST_CASE("reference: the warp-specialized kernel's TMA boxes cut the packed weight and scales into its stage layout",
          "[reference]") {
  // The host encodes args.w_map / s_map from these shapes (row-major, row stride = cols); the
  // kernel reads a stage as BLOCK_N / 16 chunks of 512 bytes (chunk c: n tile c of the block, the
  // k block's four 16 x 16 words per lane) followed by the k block's scale rows.
  std::mt19937 rng(17);
  const int e = 3, n = 512, k = 256;
  std::vector<uint8_t> codes(static_cast<size_t>(e) * n * k);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() & 0xf);
  std::vector<uint16_t> scales(static_cast<size_t>(e) * n * (k / 32));
  for (auto& s : scales) s = static_cast<uint16_t>(rng());
  const W4A16Packed packed = pack_w4a16(codes.data(), scales.data(), e, n, k);
  for (int block_n : {128, 256}) {
    const chord::W4A16MapShape w = chord::w4a16_weight_map_shape(e, n, k, block_n);
    const chord::W4A16MapShape s = chord::w4a16_scale_map_shape(e, n, k, block_n, false);
    REQUIRE(w.rows * w.cols == static_cast<long long>(packed.weight.size()));
    REQUIRE(w.element_bytes == 4);
    REQUIRE(s.rows * s.cols == static_cast<long long>(packed.scales.size()));
    REQUIRE(s.element_bytes == 2);
    REQUIRE(w.box_rows * w.box_cols * 4 == block_n * 32);  // the stage's weight bytes
    REQUIRE(s.box_rows * s.box_cols * 2 == block_n * 4);   // two BF16 group rows
    size_t mismatched = 0;
    for (int x = 0; x < e; ++x)
      for (int nb = 0; nb < n / block_n; ++nb)
        for (int kb = 0; kb < k / 64; ++kb) {
          // The kernel's box coordinates (w4a16_wgmma_ws.cuh): weight (kb * 128, w_row0), scales
          // (nb * BLOCK_N, s_row0 + 2 kb).
          const long long w_row0 = static_cast<long long>(x) * (n / 16) + nb * (block_n / 16);
          const long long s_row0 = static_cast<long long>(x) * (k / 64) * 2 + 2 * kb;
          for (int c = 0; c < w.box_rows; ++c)
            for (int word = 0; word < w.box_cols; ++word) {
              const uint32_t got = packed.weight[(w_row0 + c) * w.cols + kb * w.box_cols + word];
              const int nt = nb * (block_n / 16) + c, lane = word / 4, j = word % 4;
              const size_t want = ((((size_t)x * (n / 16) + nt) * (k / 64) + kb) * 32 + lane) * 4 + j;
              mismatched += got != packed.weight[want];
            }
          for (int r = 0; r < s.box_rows; ++r)
            for (int col = 0; col < s.box_cols; ++col) {
              const uint16_t got = packed.scales[(s_row0 + r) * s.cols + nb * block_n + col];
              // bf16 [E, K/32, N]: group 2 kb + r of expert x, packed column nb * BLOCK_N + col.
              const size_t want = ((size_t)x * (k / 32) + 2 * kb + r) * n + nb * block_n + col;
              mismatched += got != packed.scales[want];
            }
        }
    CHECK(mismatched == 0);
  }
  // NF4: one FP32 absmax row of BLOCK_N per k block, the same bytes as INT4's two BF16 rows.
  const chord::W4A16MapShape nf4 = chord::w4a16_scale_map_shape(e, n, k, 256, true);
  CHECK(nf4.rows * nf4.cols * nf4.element_bytes == static_cast<long long>(packed.scales.size()) * 2);
  CHECK(nf4.box_rows * nf4.box_cols * nf4.element_bytes == 256 * 4);
}

TEST_CASE("reference: zero points decode as T((code - zp) * scale) from the packed {scale, bias} pairs, bit for bit",
          "[reference]") {
  // The kernels' decode (dequant_word_zp): (M + code) + bias with bias = -(M + zp) stored in T
  // beside the scale, exact, then one rounding of the product with the scale. The packed form
  // must give the checkpoint reference's weights for every code, zero point and scale.
  CHECK(bf16_to_float(static_cast<uint16_t>(chord::int4_zp_bias(chord::kNF4BF16, 0))) == -128.0f);
  CHECK(bf16_to_float(static_cast<uint16_t>(chord::int4_zp_bias(chord::kNF4BF16, 15))) == -143.0f);
  CHECK(fp16_to_float(static_cast<uint16_t>(chord::int4_zp_bias(chord::kNF4FP16, 0))) == -1024.0f);
  CHECK(fp16_to_float(static_cast<uint16_t>(chord::int4_zp_bias(chord::kNF4FP16, 15))) == -1039.0f);
  // zp 8 stores the symmetric kinds' constant -(M + 8).
  CHECK(chord::int4_zp_bias(chord::kNF4BF16, 8) == 0xc308u);
  CHECK(chord::int4_zp_bias(chord::kNF4FP16, 8) == 0xe408u);

  const int E = 2, N = 32, K = 128;
  std::mt19937 rng(26);
  std::vector<uint8_t> codes(static_cast<size_t>(E) * N * K), zps(static_cast<size_t>(E) * N * K / 32);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 16);
  for (auto& z : zps) z = static_cast<uint8_t>(rng() % 16);
  std::uniform_real_distribution<float> mag(1e-4f, 2e-2f);
  for (bool fp16 : {false, true}) {
    INFO((fp16 ? "fp16" : "bf16"));
    std::vector<uint16_t> scales(zps.size());
    for (auto& s : scales) {
      const float v = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
      s = fp16 ? float_to_fp16(v) : float_to_bf16(v);
    }
    const W4A16PackedZp packed = pack_w4a16_zp(codes.data(), scales.data(), zps.data(), E, N, K, fp16);
    const auto want = dequantize_codes_zp(codes, scales, zps, static_cast<int64_t>(E) * N, K, fp16);
    const auto got = dequantize_packed_zp(packed);
    REQUIRE(got.size() == want.size());
    size_t diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
    CHECK(diff == 0);
    // Every pair holds its row's scale (low half) and bias (high half) where the symmetric
    // packer puts the scale alone.
    const W4A16Packed plain = pack_w4a16(codes.data(), scales.data(), E, N, K);
    for (size_t i = 0; i < plain.scales.size(); ++i) CHECK((packed.pairs[i] & 0xffffu) == plain.scales[i]);
    // The reference is (c - zp) * s rounded once, never c*s - zp*s (two roundings): some BF16
    // scale tells them apart, and the reference takes the single rounding.
    if (!fp16) {
      int differing = 0;
      for (uint16_t sb = 0x3c00; sb < 0x3d00; ++sb) {
        const std::vector<uint8_t> c1(32, 15), z1(1, 3);
        const std::vector<uint16_t> s1 = {sb};
        const float sv = bf16_to_float(sb);
        const uint16_t once = float_to_bf16(12.0f * sv);
        const uint16_t twice = float_to_bf16(bf16_to_float(float_to_bf16(15.0f * sv)) -
                                             bf16_to_float(float_to_bf16(3.0f * sv)));
        CHECK(dequantize_codes_zp(c1, s1, z1, 1, 32)[0] == once);
        differing += once != twice;
      }
      CHECK(differing > 0);
    }
  }
  // All zero points 8 reproduce the symmetric weights.
  std::vector<uint8_t> eights(zps.size(), 8);
  std::vector<uint16_t> scales(zps.size(), float_to_bf16(0.01f));
  CHECK(dequantize_packed_zp(pack_w4a16_zp(codes.data(), scales.data(), eights.data(), E, N, K, false)) ==
        dequantize_packed(pack_w4a16(codes.data(), scales.data(), E, N, K)));
}

TEST_CASE("reference: group 128 packs one scale (or {scale, bias} pair) per 128 k and decodes bit for bit",
          "[reference]") {
  // Independent construction: a group-128 weight is the group-32 weight whose scales (and zero
  // points) repeat each 128-group's value four times. The group-128 packed form must dequantize
  // to the checkpoint reference of those repeated group-32 scales, bit for bit, and its packed
  // scale rows must be every fourth row of the repeated group-32 packing.
  const int E = 2, N = 48, K = 384;
  std::mt19937 rng(128);
  std::vector<uint8_t> codes(static_cast<size_t>(E) * N * K), zp128(static_cast<size_t>(E) * N * (K / 128));
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 16);
  for (auto& z : zp128) z = static_cast<uint8_t>(rng() % 16);
  std::uniform_real_distribution<float> mag(1e-4f, 2e-2f);
  // [rows, K/128] -> [rows, K/32]: each value four times.
  auto repeat = [&](const auto& v128) {
    std::remove_const_t<std::remove_reference_t<decltype(v128)>> v32(v128.size() * 4);
    for (size_t i = 0; i < v32.size(); ++i) v32[i] = v128[i / 4];
    return v32;
  };
  const std::vector<uint8_t> zp32 = repeat(zp128);
  for (bool fp16 : {false, true}) {
    INFO((fp16 ? "fp16" : "bf16"));
    std::vector<uint16_t> s128(zp128.size());
    for (auto& s : s128) {
      const float v = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
      s = fp16 ? float_to_fp16(v) : float_to_bf16(v);
    }
    const std::vector<uint16_t> s32 = repeat(s128);
    const int64_t rows = static_cast<int64_t>(E) * N;

    // Symmetric (dequantize_packed rounds in bf16: the bf16 case).
    const W4A16Packed g128 = pack_w4a16(codes.data(), s128.data(), E, N, K, 128);
    const W4A16Packed g32 = pack_w4a16(codes.data(), s32.data(), E, N, K);
    REQUIRE(g128.scales.size() == static_cast<size_t>(E) * N * (K / 128));
    CHECK(g128.weight == g32.weight);  // the words do not depend on the group
    size_t misplaced = 0;
    for (int x = 0; x < E; ++x)
      for (int grp = 0; grp < K / 128; ++grp)
        for (int row = 0; row < N; ++row) {
          // [E, K/128, N], column (row & ~15) + 2 (row % 8) + (row % 16) / 8: written out here.
          const int col = (row / 16) * 16 + 2 * (row % 8) + (row % 16) / 8;
          misplaced += g128.scales[((size_t)x * (K / 128) + grp) * N + col] != s128[((size_t)x * N + row) * (K / 128) + grp];
          misplaced += g128.scales[((size_t)x * (K / 128) + grp) * N + col] != g32.scales[((size_t)x * (K / 32) + 4 * grp) * N + col];
        }
    CHECK(misplaced == 0);
    if (!fp16) {
      CHECK(dequantize_packed(g128) == dequantize_codes(codes, s32, rows, K));
      CHECK(dequantize_packed(g128) == dequantize_packed(g32));
    }

    // Zero points, bf16 and fp16.
    const W4A16PackedZp z128 = pack_w4a16_zp(codes.data(), s128.data(), zp128.data(), E, N, K, fp16, 128);
    const W4A16PackedZp z32 = pack_w4a16_zp(codes.data(), s32.data(), zp32.data(), E, N, K, fp16);
    REQUIRE(z128.pairs.size() == g128.scales.size());
    const auto want = dequantize_codes_zp(codes, s32, zp32, rows, K, fp16);
    const auto got = dequantize_packed_zp(z128);
    REQUIRE(got.size() == want.size());
    size_t diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
    CHECK(diff == 0);
    size_t pair_diff = 0;
    for (int x = 0; x < E; ++x)
      for (int grp = 0; grp < K / 128; ++grp)
        for (int c = 0; c < N; ++c) {
          const uint32_t p = z128.pairs[((size_t)x * (K / 128) + grp) * N + c];
          pair_diff += p != z32.pairs[((size_t)x * (K / 32) + 4 * grp) * N + c];
          pair_diff += (p & 0xffffu) != g128.scales[((size_t)x * (K / 128) + grp) * N + c];
        }
    CHECK(pair_diff == 0);
  }
  // A group-128 scale covers k 128 g .. 128 g + 127: changing one 128-group's scale changes
  // exactly its 128 weights of the row.
  std::vector<uint16_t> ones(zp128.size(), float_to_bf16(1.0f));
  std::vector<uint16_t> moved = ones;
  moved[1] = float_to_bf16(2.0f);  // expert 0, row 0, group 1
  const auto a = dequantize_packed(pack_w4a16(codes.data(), ones.data(), E, N, K, 128));
  const auto b = dequantize_packed(pack_w4a16(codes.data(), moved.data(), E, N, K, 128));
  size_t changed_outside = 0, same_inside = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool inside = i >= 128 && i < 256;
    changed_outside += !inside && a[i] != b[i];
    same_inside += inside && a[i] == b[i] && (codes[i] & 15) != 8;
  }
  CHECK(changed_outside == 0);
  CHECK(same_inside == 0);
  CHECK_THROWS(pack_w4a16(codes.data(), ones.data(), E, N, 192, 128));  // K % 128 != 0

  // The warp-specialized kernel's TMA scale box of group 128: one row of [E * K/128, N], k block
  // kb (64 k) of expert x at row x * (K / 128) + kb / 2 (w4a16_wgmma_ws.cuh), holding the scales
  // of that block's own 128-group.
  const W4A16Packed g = pack_w4a16(codes.data(), moved.data(), E, N, K, 128);
  for (bool zp : {false, true}) {
    const chord::W4A16MapShape s = chord::w4a16_scale_map_shape(E, N, K, 16, false, zp, true);
    CHECK(s.rows == static_cast<long long>(E) * (K / 128));
    CHECK(s.cols == N);
    CHECK(s.element_bytes == (zp ? 4 : 2));
    CHECK((s.box_rows == 1 && s.box_cols == 16));
    CHECK(s.rows * s.cols == static_cast<long long>(g.scales.size()));
  }
  size_t box_mismatch = 0;
  for (int x = 0; x < E; ++x)
    for (int kb = 0; kb < K / 64; ++kb)
      for (int row = 0; row < N; ++row) {
        // The kernel's box row, at the column the permutation puts this weight row in, holds the
        // checkpoint scale of (row, the 128-group of k block kb's first k).
        const size_t box = (static_cast<size_t>(x) * (K / 128) + kb / 2) * N + packed_scale_column(row);
        box_mismatch += g.scales[box] != moved[(static_cast<size_t>(x) * N + row) * (K / 128) + (kb * 64) / 128];
      }
  CHECK(box_mismatch == 0);
}

TEST_CASE("reference: the grouped GEMM's rows equal a serial fp32 loop in k order, every mode, duplicate routes last-wins",
          "[reference]") {
  // The GPU tests judge every kernel by this reference, so it must be the plain serial loop
  // whatever threads it runs on: each valid row T(sum_k a * w) in k order, other rows untouched.
  for (bool fp16 : {false, true}) {
    const int e = 5, n = 24, k = 80;
    std::mt19937 rng(fp16 ? 7 : 3);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto to_elem = fp16 ? float_to_fp16 : float_to_bf16;
    auto to_float = fp16 ? fp16_to_float : bf16_to_float;
    auto randoms = [&](size_t count) {
      std::vector<uint16_t> v(count);
      for (uint16_t& x : v) x = to_elem(u(rng));
      return v;
    };
    const std::vector<uint16_t> w = randoms(static_cast<size_t>(e) * n * k);
    auto serial_row = [&](const uint16_t* a_row, int expert) {
      std::vector<uint16_t> out(n);
      for (int col = 0; col < n; ++col) {
        float acc = 0.f;
        for (int i = 0; i < k; ++i) acc += to_float(a_row[i]) * to_float(w[(static_cast<size_t>(expert) * n + col) * k + i]);
        out[col] = to_elem(acc);
      }
      return out;
    };
    const uint16_t kUntouched = 0x7fff;
    auto row_of = [&](const std::vector<uint16_t>& out, int r) {
      return std::vector<uint16_t>(out.begin() + static_cast<std::ptrdiff_t>(r) * n,
                                   out.begin() + static_cast<std::ptrdiff_t>(r + 1) * n);
    };
    INFO((fp16 ? "fp16" : "bf16"));
    // The optional magnitudes: a second call with them writes the same outputs, and
    // sqrt(sum_k (a_k w_k)^2) for each element it writes (src[r]: row r's activations and
    // expert, or nullptr where the routing leaves the row alone: its magnitudes untouched).
    using RowSource = std::pair<const uint16_t*, int>;
    auto check_magnitudes = [&](const std::vector<uint16_t>& out, const std::vector<RowSource>& src, auto call) {
      std::vector<uint16_t> again(out.size(), kUntouched);
      std::vector<float> mag(out.size(), -1.f);
      call(again.data(), mag.data());
      CHECK(again == out);
      for (size_t r = 0; r < src.size(); ++r) {
        for (int col = 0; col < n; ++col) {
          const float got = mag[r * n + col];
          if (src[r].first == nullptr) {
            CHECK(got == -1.f);
            continue;
          }
          double sq = 0;
          for (int i = 0; i < k; ++i) {
            const double p = double(to_float(src[r].first[i])) *
                             to_float(w[(static_cast<size_t>(src[r].second) * n + col) * k + i]);
            sq += p * p;
          }
          CHECK(got == Approx(std::sqrt(sq)).epsilon(1e-5));
        }
      }
    };
    // Contiguous: -1 and out-of-range experts are padding.
    const std::vector<int32_t> m_indices = {0, 0, -1, 2, 4, 7, 1};
    const int m = static_cast<int>(m_indices.size());
    const std::vector<uint16_t> a = randoms(static_cast<size_t>(m) * k);
    std::vector<uint16_t> out(static_cast<size_t>(m) * n, kUntouched);
    w4a16_gemm_contiguous(a.data(), m, m_indices.data(), w.data(), e, n, k, out.data(), fp16);
    for (int r = 0; r < m; ++r) {
      const int x = m_indices[r];
      CHECK(row_of(out, r) == (x >= 0 && x < e ? serial_row(&a[static_cast<size_t>(r) * k], x)
                                                : std::vector<uint16_t>(n, kUntouched)));
    }
    std::vector<RowSource> src_c;
    for (int r = 0; r < m; ++r) {
      const int x = m_indices[r];
      src_c.push_back(x >= 0 && x < e ? RowSource{&a[static_cast<size_t>(r) * k], x} : RowSource{nullptr, 0});
    }
    check_magnitudes(out, src_c, [&](uint16_t* o, float* mag) {
      w4a16_gemm_contiguous(a.data(), m, m_indices.data(), w.data(), e, n, k, o, fp16, mag);
    });
    // Masked: group g's first masked_m[g] rows (at most max_m).
    const int max_m = 3;
    const std::vector<int32_t> masked_m = {2, 0, 3, 9, 1};
    const std::vector<uint16_t> am = randoms(static_cast<size_t>(e) * max_m * k);
    std::vector<uint16_t> outm(static_cast<size_t>(e) * max_m * n, kUntouched);
    w4a16_gemm_masked(am.data(), e, max_m, masked_m.data(), w.data(), n, k, outm.data(), fp16);
    for (int g = 0; g < e; ++g) {
      for (int r = 0; r < max_m; ++r) {
        const int row = g * max_m + r;
        CHECK(row_of(outm, row) == (r < masked_m[g] ? serial_row(&am[static_cast<size_t>(row) * k], g)
                                                    : std::vector<uint16_t>(n, kUntouched)));
      }
    }
    std::vector<RowSource> src_m;
    for (int g = 0; g < e; ++g) {
      for (int r = 0; r < max_m; ++r) {
        const size_t row = static_cast<size_t>(g) * max_m + r;
        src_m.push_back(r < masked_m[g] ? RowSource{&am[row * k], g} : RowSource{nullptr, 0});
      }
    }
    check_magnitudes(outm, src_m, [&](uint16_t* o, float* mag) {
      w4a16_gemm_masked(am.data(), e, max_m, masked_m.data(), w.data(), n, k, o, fp16, mag);
    });
    // Offsets: expert x's rows end at offsets[x]; expert 1 is empty.
    const std::vector<int32_t> offsets = {2, 2, 5, 5, 6};
    const std::vector<uint16_t> ao = randoms(6 * static_cast<size_t>(k));
    std::vector<uint16_t> outo(6 * static_cast<size_t>(n), kUntouched);
    w4a16_gemm_offsets(ao.data(), 6, offsets.data(), w.data(), e, n, k, outo.data(), fp16);
    const int expert_of_row[6] = {0, 0, 2, 2, 2, 4};
    for (int r = 0; r < 6; ++r) CHECK(row_of(outo, r) == serial_row(&ao[static_cast<size_t>(r) * k], expert_of_row[r]));
    std::vector<RowSource> src_o;
    for (int r = 0; r < 6; ++r) src_o.push_back({&ao[static_cast<size_t>(r) * k], expert_of_row[r]});
    check_magnitudes(outo, src_o, [&](uint16_t* o, float* mag) {
      w4a16_gemm_offsets(ao.data(), 6, offsets.data(), w.data(), e, n, k, o, fp16, mag);
    });
    // Indexed: route 3 appears twice (experts 1 then 4: the later wins), -1 and out-of-range
    // ids and a non-local block (-1) are skipped.
    const int tokens = 3, top_k = 2, block = 2;
    const std::vector<int32_t> sorted_ids = {0, 3, 1, 99, 3, -1, 5, 2};
    const std::vector<int32_t> expert_ids = {1, -1, 4, 0};
    const std::vector<uint16_t> ai = randoms(static_cast<size_t>(tokens) * k);
    std::vector<uint16_t> outi(static_cast<size_t>(tokens) * top_k * n, kUntouched);
    w4a16_gemm_indexed(ai.data(), tokens, top_k, sorted_ids.data(), 8, expert_ids.data(), block, 8, w.data(), e, n, k,
                       outi.data(), fp16);
    auto route = [&](int id, int x) { return serial_row(&ai[static_cast<size_t>(id / top_k) * k], x); };
    CHECK(row_of(outi, 0) == route(0, 1));
    CHECK(row_of(outi, 3) == route(3, 4));
    CHECK(row_of(outi, 5) == route(5, 0));
    CHECK(row_of(outi, 2) == route(2, 0));
    CHECK(row_of(outi, 1) == std::vector<uint16_t>(n, kUntouched));  // its block is not local
    CHECK(row_of(outi, 4) == std::vector<uint16_t>(n, kUntouched));  // never routed
    auto token = [&](int id) { return &ai[static_cast<size_t>(id / top_k) * k]; };
    const std::vector<RowSource> src_i = {{token(0), 1}, {nullptr, 0}, {token(2), 0},
                                          {token(3), 4}, {nullptr, 0}, {token(5), 0}};
    check_magnitudes(outi, src_i, [&](uint16_t* o, float* mag) {
      w4a16_gemm_indexed(ai.data(), tokens, top_k, sorted_ids.data(), 8, expert_ids.data(), block, 8, w.data(), e, n,
                         k, o, fp16, mag);
    });
  }
}
