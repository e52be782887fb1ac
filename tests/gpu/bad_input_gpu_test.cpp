// Bad input on the GPU (docs/reliability.md): a rejected call launches nothing (its output
// buffer is unchanged after a sync) and the next valid call works; bad routing data, which
// the host cannot see without a sync, is skipped or clamped by the kernels instead of
// being read or written out of bounds (compute-sanitizer memcheck runs these cases).
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <dlfcn.h>
#include <unistd.h>

#include "chord/chord.h"
#include "gpu_support.hpp"
#include "reference/bf16.hpp"
#include "reference/int4_reference.hpp"
#include "reference/w4a16_gemm.hpp"
#include "tests/bad_input_cases.hpp"
#include "tests/cpu/test_support.hpp"

using namespace chord::test;
using chord::ref::bf16_to_float;

namespace {

constexpr uint16_t kPoison = 0x7fc1;  // a NaN no kernel produces

struct Weight {
  int e, n, k;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, logical;
  std::unique_ptr<DeviceBuffer> codes_dev, scales_src_dev, packed, packed_scales;
  chord_w4a16_weight_t tag{};
};

std::unique_ptr<Weight> make_weight(int e, int n, int k, std::mt19937& rng, const Stream& stream) {
  auto w = std::make_unique<Weight>();
  w->e = e;
  w->n = n;
  w->k = k;
  w->codes = random_codes(static_cast<size_t>(e) * n * k, rng);
  w->scales = random_scales(static_cast<size_t>(e) * n * (k / 32), rng);
  w->logical = chord::ref::dequantize_codes(w->codes, w->scales, static_cast<int64_t>(e) * n, k);
  w->codes_dev = std::make_unique<DeviceBuffer>(w->codes);
  w->scales_src_dev = std::make_unique<DeviceBuffer>(w->scales);
  w->packed = std::make_unique<DeviceBuffer>(chord_w4a16_weight_bytes(e, n, k));
  w->packed_scales = std::make_unique<DeviceBuffer>(chord_w4a16_scale_bytes(e, n, k));
  REQUIRE(chord_w4a16_pack(w->codes_dev->get(), 0, w->scales_src_dev->get(), e, n, k, w->packed->get(),
                           w->packed_scales->get(), &w->tag, stream.get()) == CHORD_SUCCESS);
  stream.sync();
  return w;
}

std::vector<uint16_t> random_bf16(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = chord::ref::float_to_bf16(dist(rng));
  return v;
}

bool close_row(const uint16_t* got, const uint16_t* want, int n) {
  for (int i = 0; i < n; ++i) {
    const double g = bf16_to_float(got[i]), r = bf16_to_float(want[i]);
    if (!(std::fabs(g - r) <= 0.02 * std::max(std::fabs(r), 1.0))) return false;
  }
  return true;
}

// Rows the reference left as poison must still be poison; the others must match it.
void check_rows(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, int n) {
  REQUIRE(got.size() == want.size());
  size_t written_poison = 0, wrong = 0, valid = 0;
  for (size_t row = 0; row * n < want.size(); ++row) {
    const uint16_t* g = got.data() + row * n;
    const uint16_t* w = want.data() + row * n;
    if (w[0] == kPoison) {
      for (int i = 0; i < n; ++i) written_poison += g[i] != kPoison;
    } else {
      ++valid;
      wrong += !close_row(g, w, n);
    }
  }
  CHECK(written_poison == 0);
  CHECK(wrong == 0);
  CHECK(valid > 0);
}

}  // namespace

TEST_CASE("gpu bad input: every rejected call launches nothing, and the next valid call works", "[gpu][bad_input]") {
  std::mt19937 rng(101);
  Stream stream;
  const int e = static_cast<int>(kCaseE), n = static_cast<int>(kCaseN), k = static_cast<int>(kCaseK);
  const int m = static_cast<int>(kCaseRows);
  auto w = make_weight(e, n, k, rng, stream);
  auto a = random_bf16(static_cast<size_t>(m) * k, rng);
  DeviceBuffer a_dev(a), out(64 * 1024), routing(4096);
  routing.fill(0);
  out.fill(0xa5);
  BadInputBuffers b;
  b.a = a_dev.get();
  b.out = out.get();
  b.routing = routing.get();
  b.codes = w->codes_dev->get();
  b.src_scales = w->scales_src_dev->get();
  b.tag = w->tag;
  b.stream = stream.get();
  auto cases = bad_input_cases(b);
  for (const auto& c : cases) {
    INFO(c.entry << ": " << c.what << " -> " << chord_last_error());
    CHECK(c.call() == c.expect);
    for (const auto& needle : c.needles) CHECK(std::string(chord_last_error()).find(needle) != std::string::npos);
  }
  stream.sync();
  auto bytes = out.download<uint8_t>();
  CHECK(std::count(bytes.begin(), bytes.end(), uint8_t{0xa5}) == static_cast<long>(bytes.size()));

  // Still usable: a valid contiguous call (all rows expert 1) now succeeds and is right.
  std::vector<int32_t> m_indices(m, 1);
  routing.upload(m_indices);
  std::vector<uint16_t> want(static_cast<size_t>(m) * n, kPoison);
  chord::ref::w4a16_gemm_contiguous(a.data(), m, m_indices.data(), w->logical.data(), e, n, k, want.data());
  REQUIRE(chord_w4a16_contiguous(b.a, m, &w->tag, ints(b.routing), b.out, b.stream) == CHORD_SUCCESS);
  stream.sync();
  auto got = out.download<uint16_t>();
  got.resize(want.size());
  check_rows(got, want, n);
}

// A stream of another CUDA context than the current one: the kernels load into the current
// context and could not run on it, so the call is refused before anything is enqueued.
TEST_CASE("gpu bad input: a stream of another context is INVALID_ARGUMENT and launches nothing", "[gpu][bad_input]") {
  // cuCtxCreate is not in the library's driver table (chord never creates contexts): from libcuda.
  using CtxCreate = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  using CtxDestroy = CUresult (*)(CUcontext);
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(libcuda != nullptr);
  const auto create = reinterpret_cast<CtxCreate>(dlsym(libcuda, "cuCtxCreate_v2"));
  const auto destroy = reinterpret_cast<CtxDestroy>(dlsym(libcuda, "cuCtxDestroy_v2"));
  REQUIRE(create != nullptr);
  REQUIRE(destroy != nullptr);
  const chord::DriverApi& d = chord::driver();
  std::mt19937 rng(103);
  const int e = 1, n = 64, k = 64;
  const auto codes = random_codes(static_cast<size_t>(e) * n * k, rng);
  const auto scales = random_scales(static_cast<size_t>(e) * n * (k / 32), rng);
  DeviceBuffer codes_dev(codes), scales_dev(scales), out(static_cast<size_t>(e) * n * k * 2);
  out.fill(0xa5);
  CUcontext current = nullptr, other = nullptr;
  CUdevice device = 0;
  CHORD_CU(d.cuCtxGetCurrent(&current));
  CHORD_CU(d.cuCtxGetDevice(&device));
  REQUIRE(create(&other, 0, device) == CUDA_SUCCESS);  // made current
  CUstream foreign = nullptr;
  CHORD_CU(d.cuStreamCreate(&foreign, CU_STREAM_NON_BLOCKING));
  CHORD_CU(d.cuCtxSetCurrent(current));
  CHECK(chord_int4_dequantize_codes(codes_dev.get(), scales_dev.get(), out.get(), e, n, k, foreign) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("another CUDA context") != std::string::npos);
  CHECK(d.cuStreamSynchronize(foreign) == CUDA_SUCCESS);
  auto bytes = out.download<uint8_t>();
  CHECK(std::count(bytes.begin(), bytes.end(), uint8_t{0xa5}) == static_cast<long>(bytes.size()));
  // The same call on a stream of the current context succeeds.
  Stream stream;
  CHECK(chord_int4_dequantize_codes(codes_dev.get(), scales_dev.get(), out.get(), e, n, k, stream.get()) ==
        CHORD_SUCCESS);
  stream.sync();
  d.cuStreamDestroy(foreign);
  CHECK(destroy(other) == CUDA_SUCCESS);
  CHORD_CU(d.cuCtxSetCurrent(current));
}

TEST_CASE("gpu bad input: out-of-range routing data is skipped or clamped, never dereferenced",
          "[gpu][bad_input][bad_routing]") {
  std::mt19937 rng(103);
  Stream stream;
  const int e = 4, n = 64, k = 128;
  auto w = make_weight(e, n, k, rng, stream);

  SECTION("contiguous: expert ids >= E, negative, INT_MIN, INT_MAX") {
    const int m = 256;
    std::vector<int32_t> idx(m, -1);
    for (int r = 0; r < 100; ++r) idx[r] = 1;
    idx[100] = e;
    idx[101] = 1000;
    idx[102] = -5;
    idx[103] = INT_MIN;
    for (int r = 128; r < 178; ++r) idx[r] = 3;
    for (int r = 178; r < m; ++r) idx[r] = INT_MAX;
    auto a = random_bf16(static_cast<size_t>(m) * k, rng);
    std::vector<uint16_t> want(static_cast<size_t>(m) * n, kPoison);
    chord::ref::w4a16_gemm_contiguous(a.data(), m, idx.data(), w->logical.data(), e, n, k, want.data());
    DeviceBuffer a_dev(a), idx_dev(idx), out(want.size() * 2);
    out.upload(std::vector<uint16_t>(want.size(), kPoison));
    REQUIRE(chord_w4a16_contiguous(a_dev.get(), m, &w->tag, ints(idx_dev.get()), out.get(), stream.get()) ==
            CHORD_SUCCESS);
    stream.sync();
    check_rows(out.download<uint16_t>(), want, n);
  }

  SECTION("masked: negative, INT_MIN and > max_m counts") {
    const int max_m = 24;
    std::vector<int32_t> masked_m = {-5, 30, INT_MIN, 7};
    auto a = random_bf16(static_cast<size_t>(e) * max_m * k, rng);
    std::vector<uint16_t> want(static_cast<size_t>(e) * max_m * n, kPoison);
    std::vector<int32_t> sane = {0, max_m, 0, 7};
    chord::ref::w4a16_gemm_masked(a.data(), e, max_m, sane.data(), w->logical.data(), n, k, want.data());
    DeviceBuffer a_dev(a), mask_dev(masked_m), out(want.size() * 2);
    for (int64_t expected_m : {int64_t{0}, int64_t{4}}) {
      out.upload(std::vector<uint16_t>(want.size(), kPoison));
      REQUIRE(chord_w4a16_masked(a_dev.get(), e, max_m, &w->tag, ints(mask_dev.get()), expected_m, out.get(),
                                 stream.get()) == CHORD_SUCCESS);
      stream.sync();
      check_rows(out.download<uint16_t>(), want, n);
    }
  }

  SECTION("offsets: decreasing, negative and past-S offsets") {
    const int s_rows = 40;
    auto a = random_bf16(static_cast<size_t>(s_rows) * k, rng);
    DeviceBuffer a_dev(a), out(static_cast<size_t>(s_rows) * n * 2);
    // {decreasing tail} == {10,10,10,10}; {negative head, past-S tail} == {0,20,20,40}.
    for (auto [bad, sane] : {std::pair{std::vector<int32_t>{10, 3, 2, 0}, std::vector<int32_t>{10, 10, 10, 10}},
                             std::pair{std::vector<int32_t>{-4, 20, 20, 1000}, std::vector<int32_t>{0, 20, 20, 40}},
                             std::pair{std::vector<int32_t>{INT_MIN, INT_MAX, INT_MIN, INT_MAX},
                                       std::vector<int32_t>{0, 40, 40, 40}}}) {
      std::vector<uint16_t> want(static_cast<size_t>(s_rows) * n, kPoison);
      chord::ref::w4a16_gemm_offsets(a.data(), s_rows, sane.data(), w->logical.data(), e, n, k, want.data());
      DeviceBuffer off_dev(bad);
      out.upload(std::vector<uint16_t>(want.size(), kPoison));
      REQUIRE(chord_w4a16_offsets(a_dev.get(), s_rows, &w->tag, ints(off_dev.get()), out.get(), stream.get()) ==
              CHORD_SUCCESS);
      stream.sync();
      INFO("offsets " << bad[0] << "," << bad[1] << "," << bad[2] << "," << bad[3]);
      check_rows(out.download<uint16_t>(), want, n);
    }
    // Overlapping segments (e0 = [0,30), e2 = [5,20)): rows 5..19 get either expert's
    // result, rows 30.. stay untouched; nothing outside [0, S) is touched.
    std::vector<int32_t> overlap = {30, 5, 20, 12};
    std::vector<uint16_t> want0(static_cast<size_t>(s_rows) * n, kPoison), want2 = want0;
    std::vector<int32_t> only0 = {30, 30, 30, 30}, only2 = {5, 5, 20, 20};
    chord::ref::w4a16_gemm_offsets(a.data(), s_rows, only0.data(), w->logical.data(), e, n, k, want0.data());
    chord::ref::w4a16_gemm_offsets(a.data(), s_rows, only2.data(), w->logical.data(), e, n, k, want2.data());
    DeviceBuffer off_dev(overlap);
    out.upload(std::vector<uint16_t>(want0.size(), kPoison));
    REQUIRE(chord_w4a16_offsets(a_dev.get(), s_rows, &w->tag, ints(off_dev.get()), out.get(), stream.get()) ==
            CHORD_SUCCESS);
    stream.sync();
    auto got = out.download<uint16_t>();
    int bad_rows = 0;
    for (int r = 0; r < s_rows; ++r) {
      const uint16_t* g = got.data() + static_cast<size_t>(r) * n;
      bool ok = r >= 30 ? std::all_of(g, g + n, [](uint16_t v) { return v == kPoison; })
                : (r >= 5 && r < 20)
                    ? close_row(g, want0.data() + static_cast<size_t>(r) * n, n) ||
                          close_row(g, want2.data() + static_cast<size_t>(r) * n, n)
                    : close_row(g, want0.data() + static_cast<size_t>(r) * n, n);
      bad_rows += !ok;
    }
    CHECK(bad_rows == 0);
  }

  SECTION("indexed: expert ids out of range, route ids out of range, num_tokens_padded past capacity") {
    const int m = 16, top_k = 2, block_size = 16, capacity = 96, routes = m * top_k;
    std::vector<int32_t> ids(capacity, routes), experts = {1, e, -3, 2, 0, INT_MAX};
    for (int i = 0; i < 16; ++i) ids[i] = i;             // block 0: expert 1
    for (int i = 16; i < 48; ++i) ids[i] = i - 16;       // blocks 1, 2: bad experts, skipped
    const int32_t block3[16] = {16, 17, 18, 19, 20, 21, 22, 23, -1, routes, 1000, INT_MAX, INT_MIN, 24, 25, 26};
    std::copy(block3, block3 + 16, ids.begin() + 48);    // block 3: expert 2, some bad ids
    for (int i = 0; i < 5; ++i) ids[64 + i] = 27 + i;    // block 4: expert 0
    for (int i = 80; i < 96; ++i) ids[i] = i % routes;   // block 5: expert INT_MAX, skipped
    auto a = random_bf16(static_cast<size_t>(m) * k, rng);
    DeviceBuffer a_dev(a), ids_dev(ids), exp_dev(experts), out(static_cast<size_t>(routes) * n * 2);
    for (int32_t ntp : {1000, capacity, -5, INT_MIN}) {
      std::vector<uint16_t> want(static_cast<size_t>(routes) * n, kPoison);
      chord::ref::w4a16_gemm_indexed(a.data(), m, top_k, ids.data(), capacity, experts.data(), block_size,
                                     std::max(0, std::min(ntp, capacity)), w->logical.data(), e, n, k, want.data());
      DeviceBuffer ntp_dev(std::vector<int32_t>{ntp});
      out.upload(std::vector<uint16_t>(want.size(), kPoison));
      REQUIRE(chord_w4a16_indexed(a_dev.get(), m, &w->tag, ints(ids_dev.get()), capacity, ints(exp_dev.get()),
                                  ints(ntp_dev.get()), top_k, block_size, out.get(), stream.get()) == CHORD_SUCCESS);
      stream.sync();
      INFO("num_tokens_padded " << ntp);
      auto got = out.download<uint16_t>();
      if (ntp <= 0) {
        CHECK(std::all_of(got.begin(), got.end(), [](uint16_t v) { return v == kPoison; }));
      } else {
        check_rows(got, want, n);
      }
    }
  }
  // Under CHORD_VALIDATE_ROUTING=1 the device check recorded this test's deliberate
  // violations; consume them so a later test in this process starts from a clean report.
  chord_routing_report_t report{};
  chord_routing_check_report(&report);
}

// Child of the next test (a fresh process, so the environment is read anew): a valid call
// under the invalid CHORD_* value of this process's environment.
TEST_CASE("gpu bad input child: valid call under an invalid environment", "[.gpu_bad_input_child]") {
  if (std::getenv("CHORD_BAD_INPUT_CHILD") == nullptr) return;  // only as the parent's child
  // No pack here: every call reads the environment, so pack would fail the same way.
  // A zero weight with a valid tag is enough, the call must not get as far as a launch.
  Stream stream;
  const int m = 128, e = 2, n = 64, k = 128;
  DeviceBuffer weight(chord_w4a16_weight_bytes(e, n, k)), scales(chord_w4a16_scale_bytes(e, n, k));
  weight.fill(0);
  scales.fill(0);
  chord_w4a16_weight_t tag{CHORD_W4A16_MAGIC, CHORD_FORMAT_INT4_G32, chord_w4a16_layout_version(), 32, e, n, k,
                           weight.get(), scales.get()};
  std::vector<int32_t> idx(m, 0);
  DeviceBuffer a_dev(static_cast<size_t>(m) * k * 2), idx_dev(idx), out(m * n * 2);
  a_dev.fill(0);
  out.fill(0xa5);
  chord_status_t status = chord_w4a16_contiguous(a_dev.get(), m, &tag, ints(idx_dev.get()), out.get(), stream.get());
  stream.sync();
  auto bytes = out.download<uint8_t>();
  const bool untouched = std::count(bytes.begin(), bytes.end(), uint8_t{0xa5}) == static_cast<long>(bytes.size());
  std::printf("RESULT %d %d %s\n", static_cast<int>(status), untouched ? 1 : 0, chord_last_error());
}

TEST_CASE("gpu bad input: an invalid CHORD_* value fails the call with ENVIRONMENT and launches nothing",
          "[gpu][bad_input][env]") {
  char self[4096] = {0};
  REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  struct EnvCase {
    const char* assignment;
    const char* needle;
  };
  for (const EnvCase& c : {EnvCase{"CHORD_CACHE_DIR=relative/dir", "CHORD_CACHE_DIR"},
                           EnvCase{"CHORD_JIT_DEBUG=yes", "CHORD_JIT_DEBUG"},
                           EnvCase{"CHORD_W4A16_BM=abc", "CHORD_W4A16_BM"},
                           EnvCase{"CHORD_W4A16_STAGES=9", "STAGES must be in [2, 8]"},
                           EnvCase{"CHORD_W4A16_BN=48", "BLOCK_N"}}) {
    int code = -1;  // the child's RESULT line says what the call returned
    const std::string output = run_command(
        "CHORD_BAD_INPUT_CHILD=1 " + std::string(c.assignment) + " '" + self + "' '[.gpu_bad_input_child]'", &code);
    INFO(c.assignment << " -> " << output);
    auto at = output.find("RESULT ");
    REQUIRE(at != std::string::npos);
    std::string line = output.substr(at + 7, output.find('\n', at) - at - 7);
    CHECK(line.rfind(std::to_string(CHORD_ERROR_ENVIRONMENT) + " 1 ", 0) == 0);  // status, output untouched
    CHECK(line.find(c.needle) != std::string::npos);
  }
}
