// The C API rejects bad arguments with a status and a message naming the argument,
// launches nothing, and stays usable afterwards.
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include "chord/chord.h"
#include "launcher/driver_api.hpp"

namespace {

// Any 16-byte-aligned non-null address: validation fails before it is ever dereferenced.
void* fake(uintptr_t offset = 0) { return reinterpret_cast<void*>(uintptr_t{0x10000} + offset); }

void expect_invalid(chord_status_t status, const char* argument) {
  CHECK(status == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find(argument) != std::string::npos);
}

}  // namespace

TEST_CASE("c api: version and status strings", "[capi]") {
  CHECK(chord_api_version() == CHORD_API_VERSION);
  CHECK(std::string(chord_version()).size() >= 5);
  CHECK(std::string(chord_status_string(CHORD_ERROR_INVALID_ARGUMENT)) == "invalid argument");
  CHECK(std::string(chord_status_string(static_cast<chord_status_t>(99))) == "unknown status");
}

TEST_CASE("c api: null pointers are rejected by name", "[capi]") {
  expect_invalid(chord_int4_dequantize_codes(nullptr, fake(), fake(), 1, 64, 64, nullptr), "codes");
  expect_invalid(chord_int4_dequantize_compressed(nullptr, fake(), fake(), 1, 64, 64, nullptr), "packed");
  expect_invalid(chord_int4_dequantize_codes(fake(), nullptr, fake(), 1, 64, 64, nullptr), "scales");
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), nullptr, 1, 64, 64, nullptr), "out");
}

TEST_CASE("c api: misaligned pointers are rejected by name", "[capi]") {
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), fake(8), 1, 64, 64, nullptr), "out");
  expect_invalid(chord_int4_dequantize_compressed(fake(2), fake(), fake(), 1, 64, 64, nullptr), "packed");
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(1), fake(), 1, 64, 64, nullptr), "scales");
}

TEST_CASE("c api: bad shapes are rejected by name", "[capi]") {
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), fake(), 1, 64, 48, nullptr), "K");
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), fake(), -1, 64, 64, nullptr), "E");
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), fake(), 1, -5, 64, nullptr), "N");
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), fake(), 1 << 20, 1 << 24, 1 << 20, nullptr), "E*N*K");
}

TEST_CASE("c api: empty work succeeds without touching memory", "[capi]") {
  CHECK(chord_int4_dequantize_codes(nullptr, nullptr, nullptr, 0, 64, 64, nullptr) == CHORD_SUCCESS);
  CHECK(chord_int4_dequantize_compressed(nullptr, nullptr, nullptr, 4, 0, 64, nullptr) == CHORD_SUCCESS);
  CHECK(std::string(chord_last_error()).empty());
}

TEST_CASE("c api: the last error is per thread", "[capi]") {
  expect_invalid(chord_int4_dequantize_codes(nullptr, fake(), fake(), 1, 64, 64, nullptr), "codes");
  std::string other;
  std::thread([&] { other = chord_last_error(); }).join();
  CHECK(other.empty());
  CHECK_FALSE(std::string(chord_last_error()).empty());
}

TEST_CASE("c api: valid input without a driver reports NO_DRIVER and stays usable", "[capi]") {
  std::string why;
  if (chord::driver_available(&why)) {
    WARN("a CUDA driver is present; the no-driver path is covered on CPU machines only");
    return;
  }
  chord_status_t status = chord_int4_dequantize_codes(fake(), fake(), fake(), 1, 64, 64, nullptr);
  CHECK(status == CHORD_ERROR_NO_DRIVER);
  CHECK(std::string(chord_last_error()).find("libcuda") != std::string::npos);
  // Still usable: a later bad call gets its own precise message.
  expect_invalid(chord_int4_dequantize_codes(fake(), fake(), fake(), 1, 64, 33, nullptr), "K");
}

TEST_CASE("c api: jit stats are readable", "[capi]") {
  chord_jit_stats_t stats{};
  chord_get_jit_stats(&stats);
  chord_get_jit_stats(nullptr);  // tolerated
  CHECK(stats.disk_rebuilds <= stats.nvrtc_compiles + stats.disk_hits + 1);
}

TEST_CASE("c api: size helpers answer -1 for negative, invalid or overflowing shapes, never a wrapped size",
          "[capi]") {
  using Helper = int64_t (*)(int64_t, int64_t, int64_t);
  const Helper helpers[] = {chord_w4a16_weight_bytes, chord_w4a16_scale_bytes, chord_nf4_weight_bytes,
                            chord_nf4_absmax_bytes};
  const int64_t big = int64_t{1} << 40;
  const int64_t bad[][3] = {{-1, 16, 64}, {2, -16, 64}, {2, 16, -64}, {0, 16, 64},  {2, 40, 64},
                            {2, 16, 100}, {big, 16, 64}, {2, big, 64}, {2, 16, big}, {INT64_MIN, INT64_MIN, 64}};
  for (Helper helper : helpers) {
    for (const auto& s : bad) {
      INFO(s[0] << " x " << s[1] << " x " << s[2]);
      CHECK(helper(s[0], s[1], s[2]) == -1);
    }
  }
  // E*N*K past 2^40 (the NF4 pack's limit), where E*N*K/2 itself would still fit.
  CHECK(chord_nf4_weight_bytes(65536, 1 << 20, 1 << 20) == -1);
  CHECK(chord_nf4_absmax_bytes(65536, 1 << 20, 1 << 20) == -1);
  CHECK(chord_nf4_weight_bytes(2, 16, 64) == 2 * 16 * 64 / 2);
  CHECK(chord_nf4_absmax_bytes(2, 16, 64) == 2 * 16 * 64 / 64 * 4);
  CHECK(chord_w4a16_weight_bytes(2, 16, 64) == 2 * 16 * 64 / 2);
  CHECK(chord_w4a16_scale_bytes(2, 16, 64) == 2 * 16 * 64 / 32 * 2);
}
