// NF4 weights through the C API against the CPU reference (reference/nf4_reference.hpp):
// pack from both QuantState forms is bit-identical to the reference packer, dequantize is
// bit-identical to bitsandbytes' dequantize_4bit arithmetic (BF16 and FP16), and the NF4
// grouped GEMM (offsets mode) matches the reference on uneven and empty experts.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "chord/chord.h"
#include "gpu_support.hpp"
#include "reference/bf16.hpp"
#include "reference/nf4_reference.hpp"
#include "reference/w4a16_gemm.hpp"

using namespace chord::test;
using chord::ref::NF4Float;

namespace {

struct NF4Weight {
  chord::ref::NF4QuantState state;
  std::unique_ptr<DeviceBuffer> weight_dev, absmax_dev;
  chord_w4a16_weight_t tag{};
};

std::vector<float> normal_values(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 0.03f);
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = dist(rng) * (1.0f + static_cast<float>((i / 64) % 5));
  return v;
}

// Quantizes on the host, packs on the GPU from the QuantState as a checkpoint holds it.
NF4Weight make_nf4(int e, int n, int k, bool double_quant, std::mt19937& rng, const Stream& stream) {
  NF4Weight w;
  const std::vector<float> x = normal_values(static_cast<size_t>(e) * n * k, rng);
  w.state = chord::ref::nf4_quantize(x.data(), e, n, k, double_quant);
  DeviceBuffer packed(w.state.packed);
  std::unique_ptr<DeviceBuffer> absmax, absmax2, code2;
  if (double_quant) {
    absmax = std::make_unique<DeviceBuffer>(w.state.absmax_q);
    absmax2 = std::make_unique<DeviceBuffer>(w.state.absmax2);
    code2 = std::make_unique<DeviceBuffer>(w.state.code2);
  } else {
    absmax = std::make_unique<DeviceBuffer>(w.state.absmax);
  }
  w.weight_dev = std::make_unique<DeviceBuffer>(chord_nf4_weight_bytes(e, n, k));
  w.absmax_dev = std::make_unique<DeviceBuffer>(chord_nf4_absmax_bytes(e, n, k));
  REQUIRE(chord_nf4_pack(packed.get(), absmax->get(), double_quant ? absmax2->get() : nullptr,
                         double_quant ? code2->get() : nullptr, w.state.offset, e, n, k, w.weight_dev->get(),
                         w.absmax_dev->get(), &w.tag, stream.get()) == CHORD_SUCCESS);
  stream.sync();
  return w;
}

}  // namespace

TEST_CASE("gpu nf4: pack is bit-identical to the reference packer, dequantize to bitsandbytes", "[gpu][nf4]") {
  std::mt19937 rng(91);
  Stream stream;
  // 3 x 48 x 192: 432 blocks, the nested 256-block split mid-expert; 5 x 256 x 2048: 40960.
  for (auto [e, n, k] : {std::tuple{1, 16, 64}, std::tuple{3, 48, 192}, std::tuple{5, 256, 2048}}) {
    for (bool dq : {false, true}) {
      NF4Weight w = make_nf4(e, n, k, dq, rng, stream);
      CHECK(w.tag.format == CHORD_FORMAT_NF4);
      CHECK(w.tag.group_size == 64);
      const chord::ref::NF4Packed want = chord::ref::pack_nf4(w.state);
      CHECK(w.weight_dev->download<uint32_t>() == want.weight);
      const std::vector<float> absmax = w.absmax_dev->download<float>();
      REQUIRE(absmax.size() == want.absmax.size());
      CHECK(std::memcmp(absmax.data(), want.absmax.data(), absmax.size() * 4) == 0);
      for (auto [dtype, type] : {std::pair{CHORD_DTYPE_BF16, NF4Float::kBF16}, std::pair{CHORD_DTYPE_FP16, NF4Float::kFP16}}) {
        for (int run = 0; run < 2; ++run) {
          DeviceBuffer out(static_cast<size_t>(e) * n * k * 2);
          out.fill(0xff);
          REQUIRE(chord_nf4_dequantize(&w.tag, dtype, out.get(), stream.get()) == CHORD_SUCCESS);
          stream.sync();
          CHECK(out.download<uint16_t>() == chord::ref::nf4_dequantize(w.state, type));
        }
      }
    }
  }
}

namespace {

constexpr uint16_t kPoison = 0x7e01;  // a NaN in BF16 and FP16 that no kernel produces

float to_float(uint16_t v, NF4Float t) {
  return t == NF4Float::kFP16 ? chord::ref::fp16_to_float(v) : chord::ref::bf16_to_float(v);
}

// out[rows of e] = x[rows of e] @ W[e]^T, FP32 accumulation of the T values, one rounding (the
// W4A16 reference on the dequantized NF4 weight); rows outside the offsets stay poison. `mag`
// gets each written element's sqrt(sum_k (x_k w_k)^2), the scale of check_close's tolerance.
std::vector<uint16_t> reference_offsets(const std::vector<uint16_t>& x, const std::vector<int32_t>& offsets,
                                        const std::vector<uint16_t>& w, int n, int k, NF4Float t,
                                        std::vector<float>& mag) {
  const int s_rows = offsets.empty() ? 0 : offsets.back();
  std::vector<uint16_t> out(static_cast<size_t>(s_rows) * n, kPoison);
  mag.assign(out.size(), 0.f);
  chord::ref::w4a16_gemm_offsets(x.data(), s_rows, offsets.data(), w.data(), static_cast<int>(offsets.size()), n, k,
                                 out.data(), t == NF4Float::kFP16, mag.data());
  return out;
}

// Within tolerance_ratio's tolerance: the 8-token tiles scale an fp32 sum of table values by the
// block's absmax where the reference rounds each weight to T first.
void check_close(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const std::vector<float>& mag,
                 NF4Float t) {
  REQUIRE(got.size() == want.size());
  REQUIRE(mag.size() == want.size());
  size_t bad = 0, untouched = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i] == kPoison) {
      untouched += got[i] != kPoison;
      continue;
    }
    const double g = to_float(got[i], t), r = to_float(want[i], t);
    if (!(tolerance_ratio(g, r, mag[i]) <= 1.0)) ++bad;
  }
  CHECK(untouched == 0);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("gpu nf4: offsets GEMM with uneven and empty experts, BF16 and FP16, each case twice", "[gpu][nf4]") {
  std::mt19937 rng(93);
  Stream stream;
  // 48 and 192: N and K that are not multiples of the 64/128 tiles (supported: N % 16, K % 64).
  for (auto [e, n, k] : {std::tuple{7, 192, 384}, std::tuple{5, 48, 192}, std::tuple{4, 256, 2048}}) {
    for (bool dq : {true, false}) {
      NF4Weight w = make_nf4(e, n, k, dq, rng, stream);
      for (auto [dtype, type] :
           {std::pair{CHORD_DTYPE_BF16, NF4Float::kBF16}, std::pair{CHORD_DTYPE_FP16, NF4Float::kFP16}}) {
        const std::vector<uint16_t> logical = chord::ref::nf4_dequantize(w.state, type);
        // {1, 0, 2, 1}: a decode grid of 8-row tiles that sm_90+ splits over clusters at K = 2048
        // (the pair-table group sums with split-K).
        std::vector<std::vector<int>> cases = {{0, 1, 0, 33, 200, 0, 5}, {0, 0, 0, 0, 0, 0, 1}, {9, 9, 9, 9, 9, 9, 9},
                                               {3, 0, 70, 0, 1, 2, 150}, {1, 0, 2, 1}};
        for (auto& counts : cases) {
          counts.resize(e, 0);
          std::vector<int32_t> offsets(e);
          std::partial_sum(counts.begin(), counts.end(), offsets.begin());
          const int s_rows = offsets.back();
          if (s_rows == 0) continue;
          std::normal_distribution<float> dist(0.0f, 1.0f);
          std::vector<uint16_t> x(static_cast<size_t>(s_rows) * k);
          for (auto& v : x)
            v = type == NF4Float::kFP16 ? chord::ref::float_to_fp16(dist(rng)) : chord::ref::float_to_bf16(dist(rng));
          std::vector<float> mag;
          const std::vector<uint16_t> want = reference_offsets(x, offsets, logical, n, k, type, mag);
          DeviceBuffer d_x(x), d_off(offsets), out(want.size() * 2);
          for (int run = 0; run < 2; ++run) {
            out.upload(std::vector<uint16_t>(want.size(), kPoison));
            REQUIRE(chord_nf4_offsets(d_x.get(), dtype, s_rows, &w.tag, static_cast<const int32_t*>(d_off.get()),
                                      out.get(), stream.get()) == CHORD_SUCCESS);
            stream.sync();
            INFO("E=" << e << " N=" << n << " K=" << k << " dq=" << dq << " dtype=" << dtype << " S=" << s_rows
                      << " run " << run);
            check_close(out.download<uint16_t>(), want, mag, type);
          }
        }
      }
      // S = 0 is a no-op; mismatched tags and unsupported shapes are rejected before launch.
      CHECK(chord_nf4_offsets(nullptr, CHORD_DTYPE_BF16, 0, &w.tag, nullptr, nullptr, stream.get()) == CHORD_SUCCESS);
    }
  }
  std::mt19937 rng2(5);
  NF4Weight w = make_nf4(2, 32, 128, true, rng2, stream);
  DeviceBuffer d_x(size_t{64} * 128 * 2), d_off(std::vector<int32_t>{4, 8}), out(size_t{64} * 32 * 2);
  chord_w4a16_weight_t bad = w.tag;
  bad.n = 24;
  CHECK(chord_nf4_offsets(d_x.get(), CHORD_DTYPE_BF16, 8, &bad, static_cast<const int32_t*>(d_off.get()), out.get(),
                          stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'N' = 24 must be a multiple of 16") != std::string::npos);
  bad = w.tag;
  bad.k = 96;
  CHECK(chord_nf4_offsets(d_x.get(), CHORD_DTYPE_BF16, 8, &bad, static_cast<const int32_t*>(d_off.get()), out.get(),
                          stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'K' = 96 must be a multiple of 64") != std::string::npos);
  bad = w.tag;
  bad.format = CHORD_FORMAT_INT4_G32;
  bad.group_size = 32;
  CHECK(chord_nf4_offsets(d_x.get(), CHORD_DTYPE_BF16, 8, &bad, static_cast<const int32_t*>(d_off.get()), out.get(),
                          stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(chord_w4a16_offsets(d_x.get(), 8, &w.tag, static_cast<const int32_t*>(d_off.get()), out.get(),
                            stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("format 2 (NF4); this operator needs INT4 group-32") != std::string::npos);
}
