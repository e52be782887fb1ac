// The W4A16 operators through the C API on random inputs against the CPU reference:
// pack (both checkpoint forms), dequantize, and the four GEMM modes with ragged routing,
// empty experts, single rows, partial tiles, -1 experts and over-allocated buffers, and large
// prefill on the warp-specialized WGMMA kernel (sm_90a); the same with FP16 scales, activations
// and outputs (CHORD_FORMAT_INT4_G32_FP16).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <unistd.h>

#include "chord/chord.h"
#include "core/env.hpp"
#include "gpu_support.hpp"
#include "launcher/device_context.hpp"
#include "ops/w4a16_search.hpp"
#include "reference/bf16.hpp"
#include "reference/int4_reference.hpp"
#include "reference/nf4_reference.hpp"
#include "reference/w4a16_gemm.hpp"
#include "reference/w4a16_pack.hpp"
#include "tests/cpu/test_support.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

using namespace chord::test;
using chord::ref::bf16_to_float;

namespace {

constexpr uint16_t kPoison = 0x7fc1;  // a NaN (BF16 and FP16) no kernel produces

// The 16-bit type of a weight's scales, activations and outputs.
bool g_fp16 = false;  // set by Fp16Scope: the test cases run once in BF16 and once in FP16

float to_float(uint16_t v) { return g_fp16 ? chord::ref::fp16_to_float(v) : bf16_to_float(v); }
uint16_t from_float(float v) { return g_fp16 ? chord::ref::float_to_fp16(v) : chord::ref::float_to_bf16(v); }

// Runs the helpers below in FP16 (CHORD_FORMAT_INT4_G32_FP16) while it lives.
struct Fp16Scope {
  explicit Fp16Scope(bool fp16) { g_fp16 = fp16; }
  ~Fp16Scope() { g_fp16 = false; }
  Fp16Scope(const Fp16Scope&) = delete;
  Fp16Scope& operator=(const Fp16Scope&) = delete;
};

struct PackedWeight {
  int e, n, k;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  std::vector<uint16_t> logical;  // T [E, N, K]
  std::unique_ptr<DeviceBuffer> weight_dev, scales_dev;
  chord_w4a16_weight_t tag{};
};

// Scales in T. FP16 ones use the full 10-bit fraction (most are not BF16 values), as GPTQ / AWQ
// checkpoints store them, so a scale rounded to BF16 anywhere would show.
std::vector<uint16_t> random_scales_t(size_t count, std::mt19937& rng) {
  std::vector<uint16_t> s = random_scales(count, rng);
  if (!g_fp16) return s;
  std::uniform_real_distribution<float> jitter(1.0f, 1.0078125f);
  for (auto& v : s) v = chord::ref::float_to_fp16(bf16_to_float(v) * jitter(rng));
  return s;
}

int pack_flags() { return g_fp16 ? CHORD_W4A16_SRC_SCALES_FP16 : 0; }

bool g_zp = false;  // set by ZpScope: make_weight packs with random zero points (formats *_ZP*)

struct ZpScope {
  explicit ZpScope(bool zp) { g_zp = zp; }
  ~ZpScope() { g_zp = false; }
  ZpScope(const ZpScope&) = delete;
  ZpScope& operator=(const ZpScope&) = delete;
};

bool g_g128 = false;  // set by G128Scope: make_weight packs group-128 scales (formats CHORD_FORMAT_INT4_G128*)

struct G128Scope {
  explicit G128Scope(bool g128) { g_g128 = g128; }
  ~G128Scope() { g_g128 = false; }
  G128Scope(const G128Scope&) = delete;
  G128Scope& operator=(const G128Scope&) = delete;
};

// The INT4 weight kind make_weight packs under the current scopes (FP16, zero points, group 128).
chord::W4A16WeightKind scoped_int4_kind() {
  if (g_g128) {
    return g_zp ? (g_fp16 ? chord::kW4A16WeightInt4ZpG128Fp16 : chord::kW4A16WeightInt4ZpG128)
                : (g_fp16 ? chord::kW4A16WeightInt4G128Fp16 : chord::kW4A16WeightInt4G128);
  }
  return g_zp ? (g_fp16 ? chord::kW4A16WeightInt4ZpFp16 : chord::kW4A16WeightInt4Zp)
              : (g_fp16 ? chord::kW4A16WeightInt4Fp16 : chord::kW4A16WeightInt4);
}

// The config the resolver picks on `device` for a call of make_weight's current kind.
chord::W4A16GemmConfig resolved_config(const chord::DeviceContext& device, chord::W4A16Mode mode,
                                       int64_t rows_per_expert, int n, int k, int experts, int a_rows = 0,
                                       int block_size = 0) {
  chord::W4A16Problem p;
  p.mode = mode;
  p.weight = scoped_int4_kind();
  p.rows_per_expert = rows_per_expert;
  p.n = n;
  p.k = k;
  p.experts = experts;
  p.a_rows = a_rows;
  p.block_size = block_size;
  p.arch = device.arch;
  p.sm_count = device.sm_count;
  return chord::resolve_w4a16_config(p);
}

// [rows, K/128] -> [rows, K/32]: each value four times (the group-32 form of a group-128 weight).
template <typename T>
std::vector<T> repeat_per_32(const std::vector<T>& v128) {
  std::vector<T> v32(v128.size() * 4);
  for (size_t i = 0; i < v32.size(); ++i) v32[i] = v128[i / 4];
  return v32;
}

// Group 128 (with zero points when g_zp): one scale (and zero point) per row and 128-k group,
// packed with CHORD_W4A16_SRC_GROUP_128. The logical weight is the group-32 reference of the
// repeated scales; the packed bytes are the reference packer's (group 128) and the dequantized
// weight is the logical one, bit for bit.
PackedWeight make_g128_weight(PackedWeight w, std::mt19937& rng, const Stream& stream) {
  REQUIRE(w.k % 128 == 0);
  const size_t groups = static_cast<size_t>(w.e) * w.n * (w.k / 128);
  const std::vector<uint16_t> s128 = random_scales_t(groups, rng);
  std::vector<uint8_t> zp128(groups, 8);
  if (g_zp) {
    for (auto& z : zp128) z = static_cast<uint8_t>(rng() % 16);
  }
  w.scales = repeat_per_32(s128);
  const int64_t rows = static_cast<int64_t>(w.e) * w.n;
  w.logical = g_zp ? chord::ref::dequantize_codes_zp(w.codes, w.scales, repeat_per_32(zp128), rows, w.k, g_fp16)
                   : chord::ref::dequantize_codes(w.codes, w.scales, rows, w.k, g_fp16);
  const uint32_t format = g_zp ? (g_fp16 ? CHORD_FORMAT_INT4_G128_ZP_FP16 : CHORD_FORMAT_INT4_G128_ZP)
                               : (g_fp16 ? CHORD_FORMAT_INT4_G128_FP16 : CHORD_FORMAT_INT4_G128);
  const int64_t scale_bytes = chord_w4a16_format_scale_bytes(format, w.e, w.n, w.k);
  REQUIRE(scale_bytes == static_cast<int64_t>(groups) * (g_zp ? 4 : 2));
  DeviceBuffer codes(w.codes), scales(s128), d_zps(zp128);
  w.weight_dev = std::make_unique<DeviceBuffer>(chord_w4a16_weight_bytes(w.e, w.n, w.k));
  w.scales_dev = std::make_unique<DeviceBuffer>(scale_bytes);
  const int flags = CHORD_W4A16_SRC_CODES | CHORD_W4A16_SRC_GROUP_128 | pack_flags();
  if (g_zp) {
    REQUIRE(chord_w4a16_pack_zp(codes.get(), flags, scales.get(), d_zps.get(), w.e, w.n, w.k, w.weight_dev->get(),
                                w.scales_dev->get(), &w.tag, stream.get()) == CHORD_SUCCESS);
  } else {
    REQUIRE(chord_w4a16_pack(codes.get(), flags, scales.get(), w.e, w.n, w.k, w.weight_dev->get(),
                             w.scales_dev->get(), &w.tag, stream.get()) == CHORD_SUCCESS);
  }
  CHECK(w.tag.format == format);
  CHECK(w.tag.group_size == 128);
  stream.sync();
  if (g_zp) {
    const auto ref = chord::ref::pack_w4a16_zp(w.codes.data(), s128.data(), zp128.data(), w.e, w.n, w.k, g_fp16, 128);
    CHECK(w.weight_dev->download<uint32_t>() == ref.weight);
    CHECK(w.scales_dev->download<uint32_t>() == ref.pairs);
  } else {
    const auto ref = chord::ref::pack_w4a16(w.codes.data(), s128.data(), w.e, w.n, w.k, 128);
    CHECK(w.weight_dev->download<uint32_t>() == ref.weight);
    CHECK(w.scales_dev->download<uint16_t>() == ref.scales);
  }
  DeviceBuffer out(static_cast<size_t>(w.e) * w.n * w.k * 2);
  REQUIRE(chord_w4a16_dequantize(&w.tag, out.get(), stream.get()) == CHORD_SUCCESS);
  stream.sync();
  CHECK(out.download<uint16_t>() == w.logical);
  return w;
}

// Asymmetric weights: zero points 0..15 per (row, group), W = T((code - zp) * scale).
PackedWeight make_zp_weight(PackedWeight w, std::mt19937& rng, const Stream& stream) {
  std::vector<uint8_t> zps(static_cast<size_t>(w.e) * w.n * (w.k / 32));
  for (auto& z : zps) z = static_cast<uint8_t>(rng() % 16);
  w.logical = chord::ref::dequantize_codes_zp(w.codes, w.scales, zps, static_cast<int64_t>(w.e) * w.n, w.k, g_fp16);
  DeviceBuffer codes(w.codes), scales(w.scales), d_zps(zps);
  w.weight_dev = std::make_unique<DeviceBuffer>(chord_w4a16_weight_bytes(w.e, w.n, w.k));
  w.scales_dev = std::make_unique<DeviceBuffer>(chord_w4a16_zp_scale_bytes(w.e, w.n, w.k));
  REQUIRE(chord_w4a16_zp_scale_bytes(w.e, w.n, w.k) == 2 * chord_w4a16_scale_bytes(w.e, w.n, w.k));
  REQUIRE(chord_w4a16_pack_zp(codes.get(), CHORD_W4A16_SRC_CODES | pack_flags(), scales.get(), d_zps.get(), w.e, w.n,
                              w.k, w.weight_dev->get(), w.scales_dev->get(), &w.tag, stream.get()) == CHORD_SUCCESS);
  CHECK(w.tag.format == (g_fp16 ? CHORD_FORMAT_INT4_G32_ZP_FP16 : CHORD_FORMAT_INT4_G32_ZP));
  stream.sync();
  // The packed pairs are the reference packer's, and the dequantized weight is the logical one.
  const auto ref = chord::ref::pack_w4a16_zp(w.codes.data(), w.scales.data(), zps.data(), w.e, w.n, w.k, g_fp16);
  CHECK(w.weight_dev->download<uint32_t>() == ref.weight);
  CHECK(w.scales_dev->download<uint32_t>() == ref.pairs);
  DeviceBuffer out(static_cast<size_t>(w.e) * w.n * w.k * 2);
  REQUIRE(chord_w4a16_dequantize(&w.tag, out.get(), stream.get()) == CHORD_SUCCESS);
  stream.sync();
  CHECK(out.download<uint16_t>() == w.logical);
  return w;
}

PackedWeight make_weight(int e, int n, int k, std::mt19937& rng, const Stream& stream) {
  PackedWeight w{e, n, k, {}, {}, {}, nullptr, nullptr, {}};
  w.codes = random_codes(static_cast<size_t>(e) * n * k, rng);
  if (g_g128) return make_g128_weight(std::move(w), rng, stream);
  w.scales = random_scales_t(static_cast<size_t>(e) * n * (k / 32), rng);
  if (g_zp) return make_zp_weight(std::move(w), rng, stream);
  w.logical = chord::ref::dequantize_codes(w.codes, w.scales, static_cast<int64_t>(e) * n, k, g_fp16);
  DeviceBuffer codes(w.codes), scales(w.scales);
  w.weight_dev = std::make_unique<DeviceBuffer>(chord_w4a16_weight_bytes(e, n, k));
  w.scales_dev = std::make_unique<DeviceBuffer>(chord_w4a16_scale_bytes(e, n, k));
  REQUIRE(chord_w4a16_pack(codes.get(), CHORD_W4A16_SRC_CODES | pack_flags(), scales.get(), e, n, k,
                           w.weight_dev->get(), w.scales_dev->get(), &w.tag, stream.get()) == CHORD_SUCCESS);
  CHECK(w.tag.format == (g_fp16 ? CHORD_FORMAT_INT4_G32_FP16 : CHORD_FORMAT_INT4_G32));
  stream.sync();
  return w;
}

std::vector<uint16_t> random_activations(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> a(count);
  for (auto& v : a) v = from_float(dist(rng));
  return a;
}

// The kernel the last W4A16 call of this thread ran.
std::string last_kernel_name() {
  char name[256] = {0};
  REQUIRE(chord_w4a16_last_kernel(name, sizeof name) > 0);
  return name;
}

// Rows the reference left as poison must still be poison; others must be close: within
// tolerance_ratio's tolerance of the reference, `mag` the size of each element's products.
void check_output(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const std::vector<float>& mag) {
  REQUIRE(got.size() == want.size());
  REQUIRE(mag.size() == want.size());
  double sum_sq = 0;
  size_t valid = 0;
  for (uint16_t v : want) {
    if (v != kPoison) {
      sum_sq += double(to_float(v)) * to_float(v);
      ++valid;
    }
  }
  const double rms = valid ? std::sqrt(sum_sq / valid) : 1.0;
  size_t bad = 0, untouched_violations = 0, first_bad = got.size(), near = 0;
  double err_sq = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i] == kPoison) {
      untouched_violations += got[i] != kPoison;
      continue;
    }
    double g = to_float(got[i]), r = to_float(want[i]);
    err_sq += (g - r) * (g - r);
    const double ratio = tolerance_ratio(g, r, mag[i]);
    worst = std::max(worst, ratio);
    near += ratio > 0.25;
    if (!(ratio <= 1.0)) {
      if (bad++ == 0) first_bad = i;
    }
  }
  CHECK(untouched_violations == 0);
  // Where a failure is: the first element out of tolerance (flat index into the output) and the
  // kernel that wrote it.
  INFO("first bad element " << first_bad << ": got "
                            << (first_bad < got.size() ? to_float(got[first_bad]) : 0.f) << ", want "
                            << (first_bad < got.size() ? to_float(want[first_bad]) : 0.f) << ", size of its products "
                            << (first_bad < got.size() ? mag[first_bad] : 0.f) << ", rms " << rms
                            << ", kernel " << last_kernel_name() << "; " << near
                            << " elements over a quarter of the tolerance, the worst at " << worst << " of it");
  CHECK(bad == 0);
  if (valid) CHECK(std::sqrt(err_sq / valid) / rms < 1e-2);
}

// vLLM's moe_align_block_size on the host: skewed top-k routing, segments padded to
// block_size with the sentinel M*top_k, -1 for experts not on this rank.
struct Routing {
  std::vector<int32_t> sorted_ids, expert_ids, num_tokens_padded;
  int capacity = 0;
};

// hot >= 0: that expert is every token's first choice (with top_k 1 it holds all rows).
Routing align_routing(int m, int top_k, int experts, int block_size, const std::vector<bool>& local,
                      int extra_capacity, std::mt19937& rng, int hot = -1) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> bias(experts);
  for (auto& b : bias) b = 3.f * u(rng) * u(rng);  // skew: some experts popular, some empty
  if (hot >= 0) bias[hot] = 10.f;
  std::vector<std::vector<int32_t>> per_expert(experts);
  for (int t = 0; t < m; ++t) {
    std::vector<std::pair<float, int>> scores(experts);
    for (int x = 0; x < experts; ++x) scores[x] = {u(rng) + bias[x], x};
    std::partial_sort(scores.begin(), scores.begin() + top_k, scores.end(), std::greater<>());
    for (int j = 0; j < top_k; ++j) per_expert[scores[j].second].push_back(t * top_k + j);
  }
  Routing r;
  const int sentinel = m * top_k;
  for (int x = 0; x < experts; ++x) {
    if (per_expert[x].empty()) continue;
    auto ids = per_expert[x];
    ids.resize((ids.size() + block_size - 1) / block_size * block_size, sentinel);
    for (size_t b = 0; b < ids.size(); b += block_size) r.expert_ids.push_back(local[x] ? x : -1);
    r.sorted_ids.insert(r.sorted_ids.end(), ids.begin(), ids.end());
  }
  r.num_tokens_padded = {static_cast<int32_t>(r.sorted_ids.size())};
  r.capacity = static_cast<int>(r.sorted_ids.size()) + extra_capacity;
  r.sorted_ids.resize(r.capacity, sentinel);  // over-allocated tail, never read
  r.expert_ids.resize((r.capacity + block_size - 1) / block_size, 12345);  // garbage past the prefix
  return r;
}


// Each mode's GEMM through the C API on fresh random activations, against the CPU reference:
// output poisoned first, so rows the reference leaves untouched must stay poison. Then the same
// call captured in a CUDA Graph and replayed (poisoned again) must write the same bits: every
// kernel and config the tests reach is graph-capturable. `capture_first`: the captured call
// comes first (a shape first seen during capture), checked against the reference, then eager.
template <typename Call>
void run_and_check(const std::vector<uint16_t>& want, const std::vector<float>& mag, DeviceBuffer& out,
                   const Stream& stream, Call call,
                   bool capture_first = false) {
  const std::vector<uint16_t> poison(want.size(), kPoison);
  auto eager_call = [&] {
    out.upload(poison);
    const chord_status_t status = call();
    INFO(chord_last_error());
    REQUIRE(status == CHORD_SUCCESS);
    stream.sync();
    return out.download<uint16_t>();
  };
  auto replayed_call = [&] {
    out.upload(poison);
    capture_and_replay(stream, [&] { REQUIRE(call() == CHORD_SUCCESS); });
    return out.download<uint16_t>();
  };
  if (capture_first) {
    const std::vector<uint16_t> replayed = replayed_call();
    check_output(replayed, want, mag);
    check_output(eager_call(), want, mag);
    return;
  }
  const std::vector<uint16_t> eager = eager_call();
  check_output(eager, want, mag);
  CHECK(replayed_call() == eager);
}

// Experts' rows padded to the contiguous alignment (-1 on padding rows); returns m.
int check_contiguous(const PackedWeight& w, const std::vector<int>& rows, std::mt19937& rng, const Stream& stream) {
  const int align = static_cast<int>(chord_w4a16_contiguous_alignment());
  std::vector<int32_t> m_indices;
  for (int x = 0; x < w.e; ++x) {
    const int padded = (rows[x] + align - 1) / align * align;
    for (int r = 0; r < padded; ++r) m_indices.push_back(r < rows[x] ? x : -1);
  }
  const int m = static_cast<int>(m_indices.size());
  auto a = random_activations(static_cast<size_t>(m) * w.k, rng);
  std::vector<uint16_t> want(static_cast<size_t>(m) * w.n, kPoison);
  std::vector<float> mag(want.size());
  chord::ref::w4a16_gemm_contiguous(a.data(), m, m_indices.data(), w.logical.data(), w.e, w.n, w.k, want.data(),
                                    g_fp16, mag.data());
  DeviceBuffer d_a(a), d_idx(m_indices), out(want.size() * 2);
  run_and_check(want, mag, out, stream, [&] {
    return chord_w4a16_contiguous(d_a.get(), m, &w.tag, static_cast<const int32_t*>(d_idx.get()), out.get(),
                                  stream.get());
  });
  return m;
}

void check_masked(const PackedWeight& w, const std::vector<int32_t>& masked_m, int max_m, int64_t expected_m,
                  std::mt19937& rng, const Stream& stream) {
  auto a = random_activations(static_cast<size_t>(w.e) * max_m * w.k, rng);
  std::vector<uint16_t> want(static_cast<size_t>(w.e) * max_m * w.n, kPoison);
  std::vector<float> mag(want.size());
  chord::ref::w4a16_gemm_masked(a.data(), w.e, max_m, masked_m.data(), w.logical.data(), w.n, w.k, want.data(),
                                g_fp16, mag.data());
  DeviceBuffer d_a(a), d_mask(masked_m), out(want.size() * 2);
  run_and_check(want, mag, out, stream, [&] {
    return chord_w4a16_masked(d_a.get(), w.e, max_m, &w.tag, static_cast<const int32_t*>(d_mask.get()), expected_m,
                              out.get(), stream.get());
  });
}

// Cumulative end rows of `counts`; returns the routed rows S.
int check_offsets(const PackedWeight& w, const std::vector<int>& counts, std::mt19937& rng, const Stream& stream,
                  bool capture_first = false) {
  std::vector<int32_t> offsets(w.e);
  std::partial_sum(counts.begin(), counts.end(), offsets.begin());
  const int s_rows = offsets.back();
  auto a = random_activations(static_cast<size_t>(s_rows) * w.k, rng);
  std::vector<uint16_t> want(static_cast<size_t>(s_rows) * w.n, kPoison);
  std::vector<float> mag(want.size());
  chord::ref::w4a16_gemm_offsets(a.data(), s_rows, offsets.data(), w.logical.data(), w.e, w.n, w.k, want.data(),
                                 g_fp16, mag.data());
  DeviceBuffer d_a(a), d_off(offsets), out(want.size() * 2);
  run_and_check(want, mag, out, stream, [&] {
    return chord_w4a16_offsets(d_a.get(), s_rows, &w.tag, static_cast<const int32_t*>(d_off.get()), out.get(),
                               stream.get());
  }, capture_first);
  return s_rows;
}

// gate_up reads row id / top_k of an [M, K] input (a_rows = M, kernel_top_k = top_k); down
// reads row id of [M*top_k, K] (a_rows = M*top_k, kernel_top_k = 1). The reference sees the
// same (a_rows, kernel_top_k) and route ids.
void check_indexed(const PackedWeight& w, const Routing& r, int a_rows, int kernel_top_k, int block_size,
                   std::mt19937& rng, const Stream& stream) {
  auto a = random_activations(static_cast<size_t>(a_rows) * w.k, rng);
  std::vector<uint16_t> want(static_cast<size_t>(a_rows) * kernel_top_k * w.n, kPoison);
  std::vector<float> mag(want.size());
  chord::ref::w4a16_gemm_indexed(a.data(), a_rows, kernel_top_k, r.sorted_ids.data(), r.capacity, r.expert_ids.data(),
                                 block_size, r.num_tokens_padded[0], w.logical.data(), w.e, w.n, w.k, want.data(),
                                 g_fp16, mag.data());
  DeviceBuffer d_a(a), d_ids(r.sorted_ids), d_exp(r.expert_ids), d_ntp(r.num_tokens_padded), out(want.size() * 2);
  run_and_check(want, mag, out, stream, [&] {
    return chord_w4a16_indexed(d_a.get(), a_rows, &w.tag, static_cast<const int32_t*>(d_ids.get()), r.capacity,
                               static_cast<const int32_t*>(d_exp.get()), static_cast<const int32_t*>(d_ntp.get()),
                               kernel_top_k, block_size, out.get(), stream.get());
  });
}

// Runs this test binary's hidden test case `tag` in a child process with the environment
// assignments `env` (the environment is read once per process) and checks that all its
// tests passed.
void check_child(const std::string& env, const char* tag) {
  char self[4096] = {0};
  REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  const std::string command = env + " '" + self + "' '" + tag + "'";
  int code = -1;
  const std::string output = run_command(command, &code);
  INFO(command << " -> " << output);
  CHECK(code == 0);  // exited, with status 0
  CHECK(output.find("All tests passed") != std::string::npos);
}

}  // namespace

TEST_CASE("gpu w4a16: pack matches the reference packer, dequantize matches the logical weight", "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(11);
  Stream stream;
  for (auto [e, n, k] : {std::tuple{1, 16, 64}, std::tuple{3, 48, 192}, std::tuple{4, 512, 2048}}) {
    auto codes = random_codes(static_cast<size_t>(e) * n * k, rng);
    auto scales = random_scales_t(static_cast<size_t>(e) * n * (k / 32), rng);
    // The packer copies 16-bit scales as they are: the same bytes for BF16 and FP16.
    auto expected = chord::ref::pack_w4a16(codes.data(), scales.data(), e, n, k);
    const auto logical = chord::ref::dequantize_codes(codes, scales, static_cast<int64_t>(e) * n, k, g_fp16);
    if (g_fp16) {
      // The FP16 scales reach the weights unrounded: with each scale rounded to BF16 first, some
      // weights differ (about a fifth of them for real checkpoints).
      std::vector<uint16_t> via_bf16(scales.size());
      for (size_t i = 0; i < scales.size(); ++i) {
        via_bf16[i] = chord::ref::float_to_fp16(bf16_to_float(chord::ref::float_to_bf16(chord::ref::fp16_to_float(scales[i]))));
      }
      CHECK(chord::ref::dequantize_codes(codes, via_bf16, static_cast<int64_t>(e) * n, k, true) != logical);
    }
    auto compressed = chord::ref::codes_to_compressed(codes, static_cast<int64_t>(e) * n, k);
    DeviceBuffer d_codes(codes), d_compressed(compressed), d_scales(scales);
    for (int format : {0, 1}) {
      DeviceBuffer w(chord_w4a16_weight_bytes(e, n, k)), s(chord_w4a16_scale_bytes(e, n, k));
      chord_w4a16_weight_t tag{};
      REQUIRE(chord_w4a16_pack(format == 0 ? d_codes.get() : d_compressed.get(), format | pack_flags(), d_scales.get(),
                               e, n, k, w.get(), s.get(), &tag, stream.get()) == CHORD_SUCCESS);
      stream.sync();
      CHECK(tag.format == (g_fp16 ? CHORD_FORMAT_INT4_G32_FP16 : CHORD_FORMAT_INT4_G32));
      CHECK(w.download<uint32_t>() == expected.weight);
      CHECK(s.download<uint16_t>() == expected.scales);
      DeviceBuffer out(static_cast<size_t>(e) * n * k * 2);
      out.fill(0xff);
      REQUIRE(chord_w4a16_dequantize(&tag, out.get(), stream.get()) == CHORD_SUCCESS);
      stream.sync();
      CHECK(out.download<uint16_t>() == logical);  // bit-exact: T((code - 8) * scale), one rounding
    }
  }
}

TEST_CASE("gpu w4a16: contiguous mode with empty experts and padding rows", "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(21);
  Stream stream;
  for (auto [e, n, k] : {std::tuple{6, 256, 512}, std::tuple{3, 64, 128}}) {
    PackedWeight w = make_weight(e, n, k, rng, stream);
    for (std::vector<int> rows : {std::vector<int>{1, 0, 130, 7, 0, 256}, std::vector<int>{300, 0, 1}}) {
      rows.resize(e, 0);
      check_contiguous(w, rows, rng, stream);
    }
  }
}

TEST_CASE("gpu w4a16: every mode at the smallest supported N and K (16, 64)", "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(23);
  Stream stream;
  const int e = 3, n = 16, k = 64;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  check_contiguous(w, {5, 0, 1}, rng, stream);
  check_masked(w, {0, 7, 1}, 9, 4, rng, stream);
  check_offsets(w, {1, 0, 20}, rng, stream);
  Routing r = align_routing(6, 2, e, 16, std::vector<bool>(e, true), 16, rng);
  check_indexed(w, r, 6, 2, 16, rng, stream);
  check_indexed(w, r, 12, 1, 16, rng, stream);
}

TEST_CASE("gpu w4a16: masked mode with zero, full and partial groups", "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(31);
  Stream stream;
  const int e = 5, n = 128, k = 256;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  for (int max_m : {1, 13, 72}) {
    for (int64_t expected_m : {int64_t{0}, int64_t{8}, int64_t{64}}) {
      std::vector<int32_t> masked_m(e);
      for (int g = 0; g < e; ++g) masked_m[g] = g == 0 ? 0 : (g == 1 ? max_m : static_cast<int>(rng() % (max_m + 1)));
      check_masked(w, masked_m, max_m, expected_m, rng, stream);
    }
  }
}

// vLLM's batched experts hand over a buffer of hundreds of rows per dispatching rank for every
// expert, holding a few rows each (docs/performance.md, "Masked calls in vLLM's batched
// buffers"): every row of such a buffer must come out right, a full group's included, and the
// rows past each group's count untouched.
TEST_CASE("gpu w4a16: masked mode in a buffer far larger than its rows, one group full", "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(47);
  Stream stream;
  const int e = 5, n = 128, k = 256, max_m = 2048;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  for (int64_t expected_m : {int64_t{0}, int64_t{8}}) {
    check_masked(w, {0, 3, 8, 17, max_m}, max_m, expected_m, rng, stream);
    check_masked(w, {1, 0, 9, 0, 2}, max_m, expected_m, rng, stream);
  }
}

// Run by the test below in child processes with an engine forced (CHORD_W4A16_ENGINE, with
// CHORD_W4A16_SPLIT_K for the mma.sync clusters and CHORD_W4A16_BM / _BN for the
// warp-specialized kernel's shorter tiles): masked calls whose grid, sized by the hint
// (w4a16_masked_tiles), holds fewer tiles than the rows (each CTA takes several in turn), about
// as many, and more (CTAs that find no tile), on the kernels that loop; on those that take one
// tile per CTA (one-role WGMMA; mma.sync's 256-thread tile, which the forced engine picks for
// the hint 0), the buffer-wide grid whatever the hint. 300 groups, more than a CTA's threads
// (the tile scan's rounds), in a 1024-row buffer; full, empty, negative and past-max_m counts.
TEST_CASE("gpu w4a16 masked slots child: the process's forced engine takes every group's tiles", "[.gpu_masked_slots_child]") {
  const char* engine = std::getenv("CHORD_W4A16_ENGINE");
  if (engine == nullptr) return;  // only as the parent's child
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(g_fp16 ? 5301 : 5300);
  Stream stream;
  const int e = 300, n = 256, k = 512, max_m = 1024;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  std::vector<int32_t> masked_m(e);
  for (int g = 0; g < e; ++g) masked_m[g] = rng() % 4 == 0 ? 0 : static_cast<int32_t>(rng() % 17);
  masked_m[3] = max_m;
  masked_m[150] = -5;
  masked_m[151] = max_m + 40;  // counts as max_m
  masked_m[e - 1] = 130;
  for (int64_t expected_m : {int64_t{1}, int64_t{8}, int64_t{0}}) {
    check_masked(w, masked_m, max_m, expected_m, rng, stream);
    const std::string name = last_kernel_name();
    INFO(name);
    const std::string want = std::string(engine) == "portable" ? "mma_sync" : engine;
    const bool ws = name.find("wgmma_ws") != std::string::npos, wgmma = name.find("wgmma") != std::string::npos;
    CHECK(ws == (want == "wgmma_ws"));
    CHECK(wgmma == (want != "mma_sync"));
    // mma.sync: the hint-sized grid runs the looping form (_ml); no hint, the 256-thread tile
    // and its buffer-wide grid.
    const bool loop_form = name.size() > 3 && name.compare(name.size() - 3, 3, "_ml") == 0;
    CHECK(loop_form == (want == "mma_sync" && expected_m > 0));
    if (const char* split = std::getenv("CHORD_W4A16_SPLIT_K")) {
      CHECK(name.find(std::string("_sk") + split) != std::string::npos);
    }
    if (const char* bm = std::getenv("CHORD_W4A16_BM")) CHECK(name.find(std::string("_m") + bm + "n") != std::string::npos);
  }
  check_masked(w, std::vector<int32_t>(e, 0), max_m, 8, rng, stream);  // no rows at all
  if (std::string(engine) == "portable") {
    // Groups of `low` to `low + spread - 1` rows (a fifth empty, group `full` full) in the large
    // buffer under `hint`: the heuristic's BM64 tile of one warp along M, looping over the
    // hint-sized grid.
    const auto check_looping_bm64 = [&](int low, int spread, int full, int64_t hint) {
      std::vector<int32_t> rows(e);
      for (int g = 0; g < e; ++g) rows[g] = rng() % 5 == 0 ? 0 : static_cast<int32_t>(low + rng() % spread);
      rows[full] = max_m;
      check_masked(w, rows, max_m, hint, rng, stream);
      const std::string name = last_kernel_name();
      INFO(name);
      CHECK(name.find("_m64n") != std::string::npos);
      CHECK(name.find("w1x4") != std::string::npos);
      CHECK(name.compare(name.size() - 3, 3, "_ml") == 0);
    };
    check_looping_bm64(16, 65, 7, 32);  // a few dozen rows per group (up to 80)
    // Over 64 rows per group (128-400): two to seven tiles per group, more than the hint-sized
    // grid's slots, so that CTAs take several tiles in turn.
    check_looping_bm64(128, 273, 11, 128);
  }
}

TEST_CASE("gpu w4a16: masked calls take every group's tiles whatever the hint sizes the grid to, on every engine",
          "[gpu][w4a16]") {
  Stream stream;
  std::vector<std::string> engines = {"CHORD_W4A16_ENGINE=mma_sync", "CHORD_W4A16_ENGINE=portable"};
  if (chord::current_device_context(stream.get()).arch.sm() == 90) {
    // The warp-specialized kernel's masked tiles under 128 tokens: those the resolver runs (48 and
    // 96 on BN256, two m64 tiles per consumer; on BN128, one), 64, and 32 at 4 stages (the TMA
    // bulk stores of short-K BN256 builds, whose token rows past BLOCK_M store nothing).
    engines.insert(engines.end(), {"CHORD_W4A16_ENGINE=mma_sync CHORD_W4A16_SPLIT_K=2", "CHORD_W4A16_ENGINE=wgmma",
                                   "CHORD_W4A16_ENGINE=wgmma_ws", "CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=48",
                                   "CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=96",
                                   "CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=48 CHORD_W4A16_BN=128",
                                   "CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=96 CHORD_W4A16_BN=128",
                                   "CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=64 CHORD_W4A16_BN=128",
                                   "CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=32 CHORD_W4A16_STAGES=4"});
  } else {
    WARN("the WGMMA engines and split-K clusters are sm_90a only: mma.sync checked alone");
  }
  for (const std::string& env : engines) check_child(env, "[.gpu_masked_slots_child]");
}

TEST_CASE("gpu w4a16: offsets mode with uneven and empty experts", "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(41);
  Stream stream;
  const int e = 7, n = 192, k = 384;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  for (const std::vector<int>& counts : {std::vector<int>{0, 1, 0, 33, 200, 0, 5}, std::vector<int>{0, 0, 0, 0, 0, 0, 1},
                                         std::vector<int>{9, 9, 9, 9, 9, 9, 9}}) {
    check_offsets(w, counts, rng, stream);
  }
}

TEST_CASE("gpu w4a16: indexed mode (vLLM routing) for gate_up and down, EP subsets, M = 1, one expert holding all rows",
          "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(51);
  Stream stream;
  const int e = 16, n = 256, k = 512;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  for (auto [m, top_k, block_size, all_local] :
       {std::tuple{1, 8, 16, true}, std::tuple{37, 8, 16, false}, std::tuple{300, 4, 64, true},
        std::tuple{50, 1, 32, false}}) {
    std::vector<bool> local(e, true);
    if (!all_local) {
      for (int x = 0; x < e; x += 3) local[x] = false;
    }
    Routing r = align_routing(m, top_k, e, block_size, local, 3 * block_size, rng);
    check_indexed(w, r, m, top_k, block_size, rng, stream);      // gate_up
    check_indexed(w, r, m * top_k, 1, block_size, rng, stream);  // down
  }
  // Every route on expert 5: 300 rows, one expert's blocks and nothing else.
  const int m = 300, block_size = 64;
  Routing r = align_routing(m, 1, e, block_size, std::vector<bool>(e, true), block_size, rng, 5);
  REQUIRE(r.expert_ids.front() == 5);
  CHECK(std::count(r.expert_ids.begin(), r.expert_ids.begin() + r.num_tokens_padded[0] / block_size, 5) ==
        (m + block_size - 1) / block_size);
  check_indexed(w, r, m, 1, block_size, rng, stream);
}

TEST_CASE("gpu w4a16: large prefill on the warp-specialized kernel in every mode, with tail tiles",
          "[gpu][w4a16]") {
  // >= 512 rows per expert (for the indexed hint 2048, 1024 where K <= 2048) and K >= 768: the resolver's INT4 rule for
  // the persistent warp-specialized WGMMA kernel on sm_90a. Experts end in partial 128-row
  // tiles, some of at most 64 rows (the half-width tiles), and one expert is empty. With zero
  // points too (the {scale, bias} TMA box), and with group 128 (one scale row per two k blocks).
  const Fp16Scope dtype(GENERATE(false, true));
  const ZpScope zp(GENERATE(false, true));
  const G128Scope g128(GENERATE(false, true));
  std::mt19937 rng(61);
  Stream stream;
  const int e = 8, n = 256, k = 768;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  const chord::DeviceContext device = chord::current_device_context(stream.get());
  auto expect_ws = [&](chord::W4A16Mode mode, int64_t rows_per_expert, int block_size = 0, int shape_n = 0,
                       int shape_k = 0) {  // 0: the test's n, k
    // The WGMMA engines are sm_90a only; CHORD_W4A16_ENGINE=portable runs these shapes on mma.sync.
    if (device.arch.sm() != 90 || chord::env().w4a16_engine.candidates == chord::W4A16EngineKnob::kPortable) return;
    CHECK(resolved_config(device, mode, rows_per_expert, shape_n ? shape_n : n, shape_k ? shape_k : k, e, 0, block_size)
              .warp_specialized());
  };
  const std::vector<int> rows = {700, 0, 900, 3, 640, 577, 1024, 300};
  expect_ws(chord::kW4A16Contiguous, check_contiguous(w, rows, rng, stream) / e);
  expect_ws(chord::kW4A16Masked, 600);
  check_masked(w, std::vector<int32_t>(rows.begin(), rows.end()), 1024, 600, rng, stream);
  expect_ws(chord::kW4A16Offsets, check_offsets(w, rows, rng, stream) / e);
  // Indexed gate_up: 4096 tokens x top-4 over 8 experts, one of them on another rank.
  const int m = 4096, top_k = 4, block_size = 128;
  std::vector<bool> local(e, true);
  local[5] = false;
  Routing r = align_routing(m, top_k, e, block_size, local, block_size, rng);
  expect_ws(chord::kW4A16Indexed, m * top_k / e, block_size);
  check_indexed(w, r, m, top_k, block_size, rng, stream);
  // Short K by the TP8 table's entry for its down shape (N 7168, K 256: four k blocks, 4
  // stages), indexed down from 53 rows per expert: 512 tokens x top-2 over 8 experts.
  PackedWeight down = make_weight(e, 7168, 256, rng, stream);
  const int m_down = 512, top_k_down = 2;
  Routing rd = align_routing(m_down, top_k_down, e, block_size, local, block_size, rng);
  expect_ws(chord::kW4A16Indexed, m_down * top_k_down / e, block_size, 7168, 256);
  check_indexed(down, rd, m_down * top_k_down, 1, block_size, rng, stream);
}


TEST_CASE("gpu w4a16: split-K decode (few rows, long K) equals the reference, eager and replayed",
          "[gpu][w4a16][graph]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(83);
  Stream stream;
  const int e = 16, n = 256, k = 2048;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  // 8 routed rows over 16 experts, empty experts between (the 1 token x top-8 shape): 8 tiles
  // x 4 n blocks of the heuristic's BN64 tile = 32 CTAs, which the resolver splits over
  // clusters on sm_90+.
  const std::vector<int> counts = {1, 0, 2, 0, 0, 1, 0, 0, 3, 0, 0, 0, 0, 1, 0, 0};
  std::vector<int32_t> offsets(e);
  std::partial_sum(counts.begin(), counts.end(), offsets.begin());
  const int s_rows = offsets.back();
  const chord::DeviceContext device = chord::current_device_context(stream.get());
  if (device.arch.sm() >= 90) CHECK(resolved_config(device, chord::kW4A16Offsets, 1, n, k, e, s_rows).split_k > 1);
  auto a = random_activations(static_cast<size_t>(s_rows) * k, rng);
  std::vector<uint16_t> want(static_cast<size_t>(s_rows) * n, kPoison);
  std::vector<float> mag(want.size());
  chord::ref::w4a16_gemm_offsets(a.data(), s_rows, offsets.data(), w.logical.data(), e, n, k, want.data(), g_fp16,
                                 mag.data());
  DeviceBuffer d_a(a), d_off(offsets), out(want.size() * 2);
  auto call = [&] {
    REQUIRE(chord_w4a16_offsets(d_a.get(), s_rows, &w.tag, static_cast<const int32_t*>(d_off.get()), out.get(),
                                stream.get()) == CHORD_SUCCESS);
  };
  out.upload(std::vector<uint16_t>(want.size(), kPoison));
  call();
  stream.sync();
  const auto eager = out.download<uint16_t>();
  check_output(eager, want, mag);
  out.upload(std::vector<uint16_t>(want.size(), kPoison));
  capture_and_replay(stream, call);
  CHECK(out.download<uint16_t>() == eager);  // rank 0 adds the partials in rank order
}

TEST_CASE("gpu w4a16: the decode tile search times a shape once and never under capture, on synthetic routing "
          "where the call's is a warm-up's; its choice equals the reference, eager and replayed",
          "[gpu][w4a16][search][graph]") {
  if (!chord::env().w4a16_search || chord::env().w4a16_overridden()) {
    WARN("skipped: CHORD_W4A16_SEARCH=0 or another CHORD_W4A16_* variable is set");
    return;
  }
  std::mt19937 rng(97);
  Stream stream;
  PackedWeight w = make_weight(16, 512, 2048, rng, stream);
  // Two decode shapes of this weight: 8 routed rows (1 token x top-8) and 20.
  const std::vector<int> eight = {1, 0, 2, 0, 0, 1, 0, 0, 3, 0, 0, 0, 0, 1, 0, 0};
  const std::vector<int> twenty = {2, 0, 5, 0, 1, 1, 0, 0, 3, 4, 0, 0, 0, 1, 3, 0};
  chord::w4a16_search_forget_choices();
  check_offsets(w, eight, rng, stream);  // searched at the eager call, the choice replayed
  CHECK(chord::w4a16_search_choices() == 1);
  check_offsets(w, eight, rng, stream);  // looked up
  CHECK(chord::w4a16_search_choices() == 1);
  // First seen under capture: the rule's tile, nothing timed (a search there would synchronize
  // the capturing stream, which fails the capture); then searched at the eager call.
  check_offsets(w, twenty, rng, stream, /*capture_first=*/true);
  CHECK(chord::w4a16_search_choices() == 2);
  // A warm-up's placeholder routing (every row on one expert) is timed on synthetic uniform
  // routing, into an output of the search's own: the rows the call leaves alone stay poison.
  // N differs from process to process, so that no choice kept in the disk cache by an earlier
  // run answers these shapes without a search.
  PackedWeight fresh = make_weight(16, 512 + 128 * static_cast<int>(getpid() % 16), 2048, rng, stream);
  const size_t synthetic = chord::w4a16_search_synthetic_timings();
  std::vector<int32_t> one_group(16, 0);
  one_group[5] = 64;
  check_masked(fresh, one_group, 64, 8, rng, stream);
  CHECK(chord::w4a16_search_choices() == 3);
  CHECK(chord::w4a16_search_synthetic_timings() == synthetic + 1);
  std::vector<bool> local(16, true);
  // Down projection, 32 routes all on expert 3; vLLM's capacity (routes + E x (block - 1)).
  Routing hot = align_routing(32, 1, 16, 16, local, 16 * 15, rng, /*hot=*/3);
  check_indexed(fresh, hot, 32, 1, 16, rng, stream);
  CHECK(chord::w4a16_search_choices() == 4);
  CHECK(chord::w4a16_search_synthetic_timings() == synthetic + 2);
  chord::w4a16_search_forget_choices();
}

// The every-mode matrix of the zero-point and group-128 tests on make_weight's current kind:
// ragged and empty experts in every mode, decode- and prefill-sized groups, M = 1, EP subsets,
// split-K (few rows, long K; `k_odd` > 0: also a K whose 64-k split starts fall mid-group),
// M = 0 and the smallest N / K (`k_min`). `k` is the ragged cases' K.
void check_every_mode(std::mt19937& rng, const Stream& stream, int k, int k_min, int k_odd = 0) {
  {
    PackedWeight w = make_weight(6, 256, k, rng, stream);
    check_contiguous(w, {1, 0, 130, 7, 0, 256}, rng, stream);
    check_masked(w, {0, 1, 8, 3, 0, 64}, 64, 8, rng, stream);           // decode-sized groups
    check_masked(w, {0, 1, 8, 3, 0, 64}, 64, 1, rng, stream);           // a low hint: CTAs take several tiles
    check_masked(w, {200, 0, 256, 17, 1, 256}, 256, 256, rng, stream);  // prefill-sized groups
    // A few dozen rows per group in a buffer far larger (vLLM's batched buffers): on sm_90a the
    // warp-specialized kernel's 48-token tile (narrow_ws), under every weight kind.
    check_masked(w, {40, 0, 25, 33, 64, 12}, 512, 32, rng, stream);
    if (chord::current_device_context(stream.get()).arch.sm() == 90 && std::getenv("CHORD_W4A16_ENGINE") == nullptr &&
        std::getenv("CHORD_W4A16_BM") == nullptr) {
      CHECK(last_kernel_name().find("wgmma_ws_masked_m48n128") != std::string::npos);
    }
    check_offsets(w, {1, 0, 0, 5, 2, 0}, rng, stream);                   // M = 8 routed rows, ragged
    check_offsets(w, {300, 0, 17, 513, 1, 64}, rng, stream);
    check_offsets(w, {0, 1, 0, 0, 0, 0}, rng, stream);                   // one row
  }
  {
    const int e = 16, n = 256, k_idx = 512;
    PackedWeight w = make_weight(e, n, k_idx, rng, stream);
    for (auto [m, top_k, block_size] : {std::tuple{1, 8, 16}, std::tuple{37, 8, 16}, std::tuple{300, 4, 64}}) {
      std::vector<bool> local(e, true);
      for (int x = 0; x < e; x += 3) local[x] = false;
      Routing r = align_routing(m, top_k, e, block_size, local, block_size, rng);
      check_indexed(w, r, m, top_k, block_size, rng, stream);      // gate_up
      check_indexed(w, r, m * top_k, 1, block_size, rng, stream);  // down
    }
  }
  {
    // Few rows and a long K: split-K on sm_90+ (clusters), one CTA per tile elsewhere.
    PackedWeight w = make_weight(4, 128, 4096, rng, stream);
    check_offsets(w, {1, 0, 2, 1}, rng, stream);
    check_masked(w, {33, 0, 2, 17}, 64, 1, rng, stream);  // clusters that take several tiles each
    if (k_odd > 0) {
      PackedWeight odd = make_weight(4, 128, k_odd, rng, stream);
      check_offsets(odd, {1, 0, 2, 1}, rng, stream);
    }
  }
  {
    // M = 0 launches nothing and succeeds.
    PackedWeight w = make_weight(2, 16, k_min, rng, stream);
    CHECK(chord_w4a16_offsets(w.weight_dev->get(), 0, &w.tag, nullptr, nullptr, stream.get()) == CHORD_SUCCESS);
    check_contiguous(w, {5, 0}, rng, stream);  // the smallest N and K
  }
}

TEST_CASE("gpu w4a16: zero points (BF16 and FP16) in every mode: ragged, empty experts, M = 0 / 1, decode, prefill, "
          "split-K, CUDA Graph; pack and dequantize bit-exact",
          "[gpu][w4a16][zp]") {
  // make_weight checks the packed bytes against the reference packer and the dequantized
  // weight bit for bit; every GEMM against the fp32 reference of that weight, then replayed
  // from a CUDA Graph (run_and_check). mma.sync decode tiles (8 tokens: int4_group_mma_zp in
  // BF16), wider tiles and the one-role WGMMA prefill (sm_90a, 256-row groups) dequant_word_zp;
  // the warp-specialized prefill is in the large-prefill test.
  const Fp16Scope dtype(GENERATE(false, true));
  const ZpScope zp(true);
  std::mt19937 rng(26);
  Stream stream;
  check_every_mode(rng, stream, 512, 64);
}

TEST_CASE("gpu w4a16: group 128 (symmetric and zero points, BF16 and FP16) in every mode: ragged, empty experts, "
          "M = 0 / 1, decode, prefill, split-K, CUDA Graph; pack and dequantize bit-exact",
          "[gpu][w4a16][g128]") {
  // make_weight (make_g128_weight) checks the packed bytes against the reference packer (group
  // 128) and the dequantized weight bit for bit against the group-32 reference of the repeated
  // scales; every GEMM against the fp32 reference of that weight, then replayed from a CUDA
  // Graph (run_and_check). mma.sync decode tiles (8 tokens: the group sums in BF16), wider
  // tiles, the one-role WGMMA prefill (sm_90a, 256-row groups); the warp-specialized prefill is
  // in the large-prefill test. K is a multiple of 128 throughout; K 640 has an odd count of
  // 128-groups per 256-k block, K 384 with split-K starts splits mid-group on 64-k blocks.
  const Fp16Scope dtype(GENERATE(false, true));
  const ZpScope zp(GENERATE(false, true));
  const G128Scope g128(true);
  std::mt19937 rng(128);
  Stream stream;
  check_every_mode(rng, stream, 640, 128, 384);
}

// The decode calls of every mode on make_weight's current kind, each sized so that the
// resolver picks an 8-token tile (the heuristic's BLOCK_M 8: a few rows per expert over 64
// experts, shapes no tuning table names): contiguous, masked, offsets, indexed gate_up and
// down, and few rows on a long K (split-K on sm_90+).
void check_decode_modes(std::mt19937& rng, const Stream& stream) {
  const int e = 64;
  PackedWeight w = make_weight(e, 128, 512, rng, stream);
  std::vector<int> rows(e, 0);
  rows[3] = 5;
  rows[40] = 1;
  check_contiguous(w, rows, rng, stream);  // m = 256 padded rows: 4 per expert
  std::vector<int32_t> masked(e, 0);
  masked[0] = 1;
  masked[5] = 3;
  masked[9] = 8;
  masked[63] = 2;
  check_masked(w, masked, 8, 2, rng, stream);
  std::vector<int> counts(e, 0);
  counts[1] = 1;
  counts[7] = 5;
  counts[30] = 2;
  check_offsets(w, counts, rng, stream);
  for (int m : {1, 3}) {
    std::vector<bool> local(e, true);
    for (int x = 0; x < e; x += 5) local[x] = false;
    Routing r = align_routing(m, 8, e, 16, local, 16, rng);
    check_indexed(w, r, m, 8, 16, rng, stream);      // gate_up
    check_indexed(w, r, m * 8, 1, 16, rng, stream);  // down
  }
  PackedWeight long_k = make_weight(4, 128, 4096, rng, stream);
  check_offsets(long_k, {1, 0, 2, 1}, rng, stream);
}

// Run by the test below in a child process whose CHORD_W4A16_GROUP_SUMS is set (the environment
// is read once per process), and in a second child with the 16-token staged tile forced
// (CHORD_W4A16_BM=16 ... STAGES=3: the group sums of its tiles that hold <= 8 rows): the BF16
// and FP16 INT4 kinds, symmetric and with zero points, group 32 and 128, in every decode mode and
// (with the resolver's tile) the every-mode matrix, against the reference.
TEST_CASE("gpu w4a16 group sums child: the decode modes under the process's CHORD_W4A16_GROUP_SUMS",
          "[.gpu_group_sums_child]") {
  const char* value = std::getenv("CHORD_W4A16_GROUP_SUMS");
  if (value == nullptr) return;  // only as the parent's child
  const int want = std::atoi(value);
  const Fp16Scope dtype(GENERATE(false, true));
  const G128Scope g128(GENERATE(false, true));
  const ZpScope zp(GENERATE(false, true));
  std::mt19937 rng((g_g128 ? 1280 : 320) + (g_zp ? 7 : 0) + (g_fp16 ? 3 : 0));
  Stream stream;
  const chord::DeviceContext device = chord::current_device_context(stream.get());
  // check_decode_modes' offsets call: the variable reached its tile
  const chord::W4A16GemmConfig c = resolved_config(device, chord::kW4A16Offsets, 0, 128, 512, 64, 8);
  INFO(c.source().name);
  REQUIRE(c.runs_group_sums());
  CHECK(c.group_sums == (g_fp16 ? 0 : want));  // FP16 tiles run the offset form only
  check_decode_modes(rng, stream);
  // The forced 16-token tile's BN 128 cannot serve the every-mode matrix's narrow weights (N 16).
  if (std::getenv("CHORD_W4A16_BN") == nullptr) check_every_mode(rng, stream, 640, 128, g_g128 ? 384 : 0);
}

TEST_CASE("gpu w4a16: both CHORD_W4A16_GROUP_SUMS forms of the decode tile's group sums equal the reference in "
          "every mode, group 32 and 128, zero points, split-K, 8- and 16-token tiles",
          "[gpu][w4a16][group_sums]") {
  // The offset form's products are exact; the correction form's fp32 sums of (128 + code) * a and
  // -136 * a cancel (int4_group_mma). Each meets the reference within check_output's tolerance.
  // "" : the resolver's tile (8 tokens per warp on these shapes); the other: the 16-token staged
  // tile, whose group sums serve its tiles of <= 8 rows.
  const char* tiles[] = {"", "CHORD_W4A16_BM=16 CHORD_W4A16_BN=128 CHORD_W4A16_BK=128 CHORD_W4A16_STAGES=3 "};
  for (int gs = 0; gs < chord::kW4A16GroupSumsCount; ++gs) {
    for (const char* tile : tiles) {
      check_child(std::string(tile) + "CHORD_W4A16_GROUP_SUMS=" + std::to_string(gs), "[.gpu_group_sums_child]");
    }
  }
}

// Run by the test below in a child process with CHORD_W4A16_N_RUN set (the environment is read
// once per process): every mode on decode tiles whose CTAs take that many n blocks, INT4 BF16 and
// FP16, symmetric and with zero points, group 32 and 128, against the reference and replayed
// from a CUDA Graph. N = 640 is ten 64-row n blocks on these tiles (five 128-row ones on the
// contiguous tile), so runs of 4 and 8 end on a shorter one; a second weight of N = 704 (eleven
// 64-row blocks: every run length ends on a shorter one) and K of one k block per n block (64,
// or 128 at group 128: the short K the rule's runs reach, where a CTA's first loads already
// belong to its next n block). The output is poisoned before each call, so a block stored to
// the wrong place shows.
TEST_CASE("gpu w4a16 n-run child: every mode under the process's CHORD_W4A16_N_RUN", "[.gpu_n_run_child]") {
  const char* value = std::getenv("CHORD_W4A16_N_RUN");
  if (value == nullptr) return;  // only as the parent's child
  const int want = std::atoi(value);
  const Fp16Scope dtype(GENERATE(false, true));
  const G128Scope g128(GENERATE(false, true));
  const ZpScope zp(GENERATE(false, true));
  std::mt19937 rng((g_g128 ? 1282 : 322) + (g_zp ? 7 : 0) + (g_fp16 ? 3 : 0) + want);
  Stream stream;
  const chord::DeviceContext device = chord::current_device_context(stream.get());
  const int e = 8, n = 640, k = g_g128 ? 384 : 192;
  INFO(resolved_config(device, chord::kW4A16Indexed, 1, n, k, e, 2, 16).source().name);
  REQUIRE(resolved_config(device, chord::kW4A16Indexed, 1, n, k, e, 2, 16).n_run == want);
  PackedWeight w = make_weight(e, n, k, rng, stream);
  check_masked(w, {0, 1, 8, 3, 0, 5, 2, 7}, 8, 4, rng, stream);
  CHECK(last_kernel_name().find("_nr" + std::to_string(want)) != std::string::npos);
  check_masked(w, std::vector<int32_t>(e, 0), 8, 4, rng, stream);  // no rows at all
  check_masked(w, {16, 0, 9, 1, 0, 16, 2, 15}, 16, 8, rng, stream);  // 16-token tiles
  // A buffer far above a low hint: the runs of the masked tile loop (its early return each tile).
  check_masked(w, {0, 1, 8, 3, 0, 5, 2, 7}, 64, 1, rng, stream);
  CHECK(last_kernel_name().find("_nr" + std::to_string(want) + "_ml") != std::string::npos);
  check_offsets(w, {1, 0, 0, 5, 2, 0, 3, 1}, rng, stream);
  check_offsets(w, {0, 1, 0, 0, 0, 0, 0, 0}, rng, stream);  // one row
  check_contiguous(w, {1, 0, 7, 3, 0, 2, 1, 8}, rng, stream);
  for (auto [m, top_k] : {std::pair{1, 8}, std::pair{5, 8}, std::pair{37, 2}}) {
    std::vector<bool> local(e, true);
    local[2] = false;
    Routing r = align_routing(m, top_k, e, 16, local, 16, rng);
    check_indexed(w, r, m, top_k, 16, rng, stream);      // gate_up
    CHECK(last_kernel_name().find("_nr" + std::to_string(want)) != std::string::npos);
    check_indexed(w, r, m * top_k, 1, 16, rng, stream);  // down
  }
  const int short_n = 704, short_k = g_g128 ? 128 : 64;
  INFO(resolved_config(device, chord::kW4A16Indexed, 1, short_n, short_k, e, 2, 16).source().name);
  REQUIRE(resolved_config(device, chord::kW4A16Indexed, 1, short_n, short_k, e, 2, 16).n_run == want);
  PackedWeight short_w = make_weight(e, short_n, short_k, rng, stream);
  check_masked(short_w, {0, 1, 8, 3, 0, 5, 2, 7}, 8, 4, rng, stream);
  CHECK(last_kernel_name().find("_nr" + std::to_string(want)) != std::string::npos);
  check_offsets(short_w, {1, 0, 0, 5, 2, 0, 3, 1}, rng, stream);
  check_contiguous(short_w, {1, 0, 7, 3, 0, 2, 1, 8}, rng, stream);
  std::vector<bool> local(e, true);
  local[5] = false;
  Routing r = align_routing(5, 8, e, 16, local, 16, rng);
  check_indexed(short_w, r, 5, 8, 16, rng, stream);  // gate_up
  check_indexed(short_w, r, 5 * 8, 1, 16, rng, stream);  // down
}

TEST_CASE("gpu w4a16: n-block runs (2, 4, 8 per CTA) equal the reference in every mode, group 32 and 128, zero "
          "points, BF16 and FP16, ragged, empty experts, M = 1, a shorter last run, one k block per n block, "
          "CUDA Graph",
          "[gpu][w4a16][n_run]") {
  for (int run : {2, 4, 8}) check_child("CHORD_W4A16_N_RUN=" + std::to_string(run), "[.gpu_n_run_child]");
}

// Run by the test below in a child process with CHORD_W4A16_SEARCH=0, so that the call runs the
// rule's tile and not one the decode tile search timed faster.
TEST_CASE("gpu w4a16 n-run rule child: the short-K rule on a TP-split down projection", "[.gpu_n_run_rule_child]") {
  const char* search = std::getenv("CHORD_W4A16_SEARCH");
  if (search == nullptr || std::string(search) != "0") return;  // only as the parent's child
  // Qwen3-235B under TP8: down is N 4096 x K 192 per expert, 128 experts, top-8, vLLM's block 16.
  std::mt19937 rng(4096192);
  Stream stream;
  const chord::DeviceContext device = chord::current_device_context(stream.get());
  const int e = 128, n = 4096, k = 192;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  const std::vector<bool> local(e, true);
  for (int m : {1, 8, 64}) {
    Routing r = align_routing(m, 8, e, 16, local, 16, rng);
    check_indexed(w, r, m * 8, 1, 16, rng, stream);  // down
    INFO(m << " tokens: " << last_kernel_name());
    // 64 tokens reach about 126 experts: 8 runs of 4 of the 32 n blocks each, 7.6 CTAs per SM on
    // 132 SMs (more on fewer; the rule runs them on sm_90 only, and not under a forced
    // CHORD_W4A16_* setting such as the portable engine); one token reaches 8 experts.
    if (m == 64 && device.arch.sm() == 90 && device.sm_count <= 132 && !chord::env().w4a16_overridden()) {
      CHECK(last_kernel_name().find("_nr4") != std::string::npos);
    }
    if (m == 1) CHECK(last_kernel_name().find("_nr") == std::string::npos);
  }
}

TEST_CASE("gpu w4a16: the short-K rule runs n blocks per CTA on a TP-split down projection and equals the reference",
          "[gpu][w4a16][n_run]") {
  check_child("CHORD_W4A16_SEARCH=0", "[.gpu_n_run_rule_child]");
}

// Run by the test below in a child process with a one-role WGMMA tile forced (CHORD_W4A16_ENGINE=
// wgmma, CHORD_W4A16_BM / BN; the environment is read once per process): masked, offsets and
// indexed calls whose experts hold 0, 1, a partial tile, exactly one tile and several tiles, in
// BF16 and FP16, symmetric and with zero points, group 32 and 128, against the reference and
// replayed from a CUDA Graph.
TEST_CASE("gpu w4a16 wgmma tile child: every mode on the process's forced WGMMA tile", "[.gpu_wgmma_tile_child]") {
  const char* bm_text = std::getenv("CHORD_W4A16_BM");
  if (bm_text == nullptr) return;  // only as the parent's child
  const int bm = std::atoi(bm_text);
  const Fp16Scope dtype(GENERATE(false, true));
  const G128Scope g128(GENERATE(false, true));
  const ZpScope zp(GENERATE(false, true));
  std::mt19937 rng(4800 + bm + (g_g128 ? 7 : 0) + (g_zp ? 3 : 0) + (g_fp16 ? 1 : 0));
  Stream stream;
  const chord::DeviceContext device = chord::current_device_context(stream.get());
  const int e = 6, n = 256, k = 512;
  const chord::W4A16GemmConfig c = resolved_config(device, chord::kW4A16Masked, bm, n, k, e);
  INFO(c.source().name);
  REQUIRE(c.wgmma());
  REQUIRE(c.block_m == bm);
  PackedWeight w = make_weight(e, n, k, rng, stream);
  const int max_m = 3 * bm + 5;
  check_masked(w, {0, 1, bm, bm - 3, max_m, 2 * bm + 1}, max_m, bm, rng, stream);
  check_masked(w, {0, 1, bm, bm - 3, max_m, 2 * bm + 1}, max_m, 1, rng, stream);  // CTAs take several tiles
  check_masked(w, {0, 0, 0, 0, 0, 0}, max_m, bm, rng, stream);
  // Experts whose last tile holds half a tile plus three rows, a quarter plus one, or one row short.
  check_masked(w, {bm / 2 + 3, bm / 4 + 1, bm + bm / 2 + 3, 0, bm + bm / 4 + 1, bm - 1}, max_m, bm, rng, stream);
  check_offsets(w, {bm + 1, 0, 1, 3 * bm, bm / 2, 0}, rng, stream);
  check_offsets(w, {bm / 2 + 3, bm / 4 + 1, 0, bm + bm / 2 + 3, 2 * bm + bm / 4 + 1, 1}, rng, stream);
  check_offsets(w, {0, 0, 1, 0, 0, 0}, rng, stream);  // one row
  // The routing block holds whole tiles (vLLM's block sizes 16 .. 128; 48 and 96 for their tiles).
  const int block_size = bm == 128 ? 128 : 64 % bm == 0 ? 64 : 96;
  for (int m : {1, 40}) {
    std::vector<bool> local(e, true);
    local[4] = false;
    Routing r = align_routing(m, 4, e, block_size, local, block_size, rng);
    check_indexed(w, r, m, 4, block_size, rng, stream);      // gate_up
    check_indexed(w, r, m * 4, 1, block_size, rng, stream);  // down
  }
}

TEST_CASE("gpu w4a16: the one-role WGMMA kernel at every tile width (16-128 tokens, BN 128 and 256) equals the "
          "reference in the masked, offsets and indexed modes, on full, partial and one-row tiles",
          "[gpu][w4a16][wgmma_tiles]") {
  Stream stream;
  if (chord::current_device_context(stream.get()).arch.sm() != 90) {
    WARN("the WGMMA engines are sm_90a only: forced WGMMA tile test skipped");
    return;
  }
  const char* tiles[] = {"CHORD_W4A16_BM=16 CHORD_W4A16_BN=128", "CHORD_W4A16_BM=32 CHORD_W4A16_BN=256",
                         "CHORD_W4A16_BM=32 CHORD_W4A16_BN=128", "CHORD_W4A16_BM=48 CHORD_W4A16_BN=128",
                         "CHORD_W4A16_BM=48 CHORD_W4A16_BN=256", "CHORD_W4A16_BM=64 CHORD_W4A16_BN=128",
                         "CHORD_W4A16_BM=96 CHORD_W4A16_BN=128", "CHORD_W4A16_BM=128 CHORD_W4A16_BN=128"};
  for (const char* tile : tiles) check_child(std::string("CHORD_W4A16_ENGINE=wgmma ") + tile, "[.gpu_wgmma_tile_child]");
}

TEST_CASE("gpu w4a16: a mismatched weight tag is rejected before launch, zero rows launch nothing",
          "[gpu][w4a16]") {
  const Fp16Scope dtype(GENERATE(false, true));
  std::mt19937 rng(71);
  Stream stream;
  PackedWeight w = make_weight(2, 64, 128, rng, stream);
  chord_w4a16_weight_t bad = w.tag;
  bad.layout_version = 99;
  DeviceBuffer out(64 * 64 * 2);
  int32_t* no_routing = reinterpret_cast<int32_t*>(out.get());
  CHECK(chord_w4a16_offsets(out.get(), 8, &bad, no_routing, out.get(), stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("layout version") != std::string::npos);
  bad = w.tag;
  bad.magic = 0;
  CHECK(chord_w4a16_offsets(out.get(), 8, &bad, no_routing, out.get(), stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  bad = w.tag;
  bad.k = 100;
  CHECK(chord_w4a16_offsets(out.get(), 8, &bad, no_routing, out.get(), stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'K'") != std::string::npos);
  // The NF4 operator takes neither INT4 format; the INT4 operators take both.
  CHECK(chord_nf4_offsets(out.get(), g_fp16 ? CHORD_DTYPE_FP16 : CHORD_DTYPE_BF16, 8, &w.tag, no_routing, out.get(),
                          stream.get()) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("this operator needs NF4") != std::string::npos);
  // No rows: nothing launched, nothing read (null pointers are fine), in every mode.
  CHECK(chord_w4a16_contiguous(nullptr, 0, &w.tag, nullptr, nullptr, stream.get()) == CHORD_SUCCESS);
  CHECK(chord_w4a16_masked(nullptr, 0, 4, &w.tag, nullptr, 0, nullptr, stream.get()) == CHORD_SUCCESS);
  CHECK(chord_w4a16_offsets(nullptr, 0, &w.tag, nullptr, nullptr, stream.get()) == CHORD_SUCCESS);
  CHECK(chord_w4a16_indexed(nullptr, 0, &w.tag, nullptr, 16, nullptr, nullptr, 1, 16, nullptr, stream.get()) ==
        CHORD_SUCCESS);
}

TEST_CASE("gpu w4a16: routing validation reports bad device routing without a host sync", "[gpu][w4a16][routing]") {
  // The flag is read only by chord_routing_check_report(); the environment switch is read
  // once per process, so this test drives the check kernel through the operator's path
  // only when CHORD_VALIDATE_ROUTING=1 was set before the process started.
  if (std::getenv("CHORD_VALIDATE_ROUTING") == nullptr || std::string(std::getenv("CHORD_VALIDATE_ROUTING")) != "1") {
    WARN("CHORD_VALIDATE_ROUTING=1 not set: routing validation test skipped (lab/device_check.sh sets it)");
    return;
  }
  std::mt19937 rng(81);
  Stream stream;
  const int e = 4, n = 64, k = 128;
  PackedWeight w = make_weight(e, n, k, rng, stream);
  chord_routing_report_t report{};
  REQUIRE(chord_routing_check_report(&report) == CHORD_SUCCESS);  // clean start
  CHECK(report.violation == 0);

  // masked: masked_m[2] > max_m
  const int max_m = 8;
  std::vector<int32_t> masked_m = {1, 8, 9, 0};
  auto a = random_activations(static_cast<size_t>(e) * max_m * k, rng);
  DeviceBuffer d_a(a), d_mask(masked_m), out(static_cast<size_t>(e) * max_m * n * 2);
  REQUIRE(chord_w4a16_masked(d_a.get(), e, max_m, &w.tag, static_cast<const int32_t*>(d_mask.get()), 4, out.get(),
                             stream.get()) == CHORD_SUCCESS);
  CHECK(chord_routing_check_report(&report) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(report.violation != 0);
  CHECK(report.index == 2);
  CHECK(report.value == 9);
  CHECK(std::string(chord_last_error()).find("masked_m") != std::string::npos);
  CHECK(chord_routing_check_report(&report) == CHORD_SUCCESS);  // cleared

  // offsets: decreasing
  std::vector<int32_t> offsets = {3, 2, 5, 5};
  DeviceBuffer d_off(offsets);
  REQUIRE(chord_w4a16_offsets(d_a.get(), 5, &w.tag, static_cast<const int32_t*>(d_off.get()), out.get(),
                              stream.get()) == CHORD_SUCCESS);
  CHECK(chord_routing_check_report(&report) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(report.index == 1);
  CHECK(std::string(chord_last_error()).find("offsets") != std::string::npos);

  // indexed: expert id out of range and num_tokens_padded over capacity
  std::vector<int32_t> sorted_ids(16, 0), expert_ids = {7}, ntp = {64};
  DeviceBuffer d_ids(sorted_ids), d_exp(expert_ids), d_ntp(ntp);
  REQUIRE(chord_w4a16_indexed(d_a.get(), 4, &w.tag, static_cast<const int32_t*>(d_ids.get()), 16,
                              static_cast<const int32_t*>(d_exp.get()), static_cast<const int32_t*>(d_ntp.get()), 1,
                              16, out.get(), stream.get()) == CHORD_SUCCESS);
  CHECK(chord_routing_check_report(&report) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(report.mode == 3);

  // clean routing stays clean
  std::vector<int32_t> good = {1, 8, 0, 3};
  DeviceBuffer d_good(good);
  REQUIRE(chord_w4a16_masked(d_a.get(), e, max_m, &w.tag, static_cast<const int32_t*>(d_good.get()), 4, out.get(),
                             stream.get()) == CHORD_SUCCESS);
  CHECK(chord_routing_check_report(&report) == CHORD_SUCCESS);
}
