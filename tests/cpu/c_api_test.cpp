// The C API rejects bad arguments with a status and a message naming the argument,
// launches nothing, and stays usable afterwards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>

#include "chord/chord.h"
#include "core/error.hpp"
#include "launcher/driver_api.hpp"

namespace {

// Any 16-byte-aligned non-null address: validation fails before it is ever dereferenced.
void* fake(uintptr_t offset = 0) { return reinterpret_cast<void*>(uintptr_t{0x10000} + offset); }
// Fake device buffers far enough apart that no call of these tests sees two of them overlap
// (operators refuse an output that overlaps another buffer of the call).
void* fake_buffer(int i) { return fake(uintptr_t(i) << 32); }

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
  chord_status_t status = chord_int4_dequantize_codes(fake_buffer(0), fake_buffer(1), fake_buffer(2), 1, 64, 64, nullptr);
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

TEST_CASE("c api: the last W4A16 kernel is per thread, empty before a call, and checks its buffer", "[capi]") {
  // A thread that made no W4A16 GEMM call (this process's CPU tests launch none) has none.
  std::string seen = "unset";
  int64_t length = -2;
  std::thread([&] {
    char buffer[64] = "x";
    length = chord_w4a16_last_kernel(buffer, sizeof buffer);
    seen = buffer;
  }).join();
  CHECK(length == 0);
  CHECK(seen.empty());
  CHECK(chord_w4a16_last_kernel(nullptr, 0) >= 0);  // the length alone
  CHECK(chord_w4a16_last_kernel(nullptr, 8) == -1);
  CHECK(std::string(chord_last_error()).find("buffer") != std::string::npos);
  char one[1] = {'x'};
  CHECK(chord_w4a16_last_kernel(one, -1) == -1);
  CHECK(one[0] == 'x');  // nothing written on an error
  // A call rejected before it chooses a kernel leaves the answer as it was.
  const int64_t before = chord_w4a16_last_kernel(nullptr, 0);
  chord_w4a16_weight_t weight{};
  expect_invalid(chord_w4a16_offsets(fake(), 8, &weight, static_cast<const int32_t*>(fake()), fake(), nullptr), "weight");
  CHECK(chord_w4a16_last_kernel(nullptr, 0) == before);
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

// Every INT4 operator passes weight w's tag check (the next check, the null output, answers).
static void expect_int4_operators_pass_tag(const chord_w4a16_weight_t& w, void* p, const int32_t* routing) {
  expect_invalid(chord_w4a16_dequantize(&w, nullptr, nullptr), "'out' is a null pointer");
  expect_invalid(chord_w4a16_offsets(p, 8, &w, routing, nullptr, nullptr), "'out' is a null pointer");
  expect_invalid(chord_w4a16_contiguous(p, 8, &w, routing, nullptr, nullptr), "'out' is a null pointer");
  expect_invalid(chord_w4a16_masked(p, 2, 4, &w, routing, 0, nullptr, nullptr), "'out' is a null pointer");
  expect_invalid(chord_w4a16_indexed(p, 4, &w, routing, 16, routing, routing, 1, 16, nullptr, nullptr),
                 "'out' is a null pointer");
}

TEST_CASE("c api: INT4 FP16 format - packed by a src_format flag, checked everywhere a format is", "[capi]") {
  void* p = fake();
  const int32_t* routing = static_cast<const int32_t*>(fake());
  chord_w4a16_weight_t tag{};
  // Flags other than CHORD_W4A16_SRC_SCALES_FP16 / _GROUP_128, or a bad layout under them, are refused.
  expect_invalid(chord_w4a16_pack(p, CHORD_W4A16_SRC_CODES | 0x40, p, 1, 16, 64, p, p, &tag, nullptr), "src_format");
  expect_invalid(chord_w4a16_pack(p, 2 | CHORD_W4A16_SRC_SCALES_FP16, p, 1, 16, 64, p, p, &tag, nullptr),
                 "src_format");
  // A valid FP16 pack gets as far as the driver (none here) and never misreads the flag.
  const chord_status_t packed =
      chord_w4a16_pack(fake_buffer(0), CHORD_W4A16_SRC_COMPRESSED | CHORD_W4A16_SRC_SCALES_FP16, fake_buffer(1), 1, 16,
                       64, fake_buffer(2), fake_buffer(3), &tag, nullptr);
  CHECK((packed == CHORD_ERROR_NO_DRIVER || packed == CHORD_ERROR_CUDA));

  // Both INT4 formats pass every INT4 operator's tag check (the next check is the output's).
  for (uint32_t format : {uint32_t{CHORD_FORMAT_INT4_G32}, uint32_t{CHORD_FORMAT_INT4_G32_FP16}}) {
    chord_w4a16_weight_t w{CHORD_W4A16_MAGIC, format, chord_w4a16_layout_version(), 32, 2, 64, 128, p, p};
    expect_int4_operators_pass_tag(w, p, routing);
    // The NF4 operators refuse either INT4 format, in either dtype.
    for (int dtype : {CHORD_DTYPE_BF16, CHORD_DTYPE_FP16}) {
      expect_invalid(chord_nf4_offsets(p, dtype, 8, &w, routing, p, nullptr), "this operator needs NF4");
      expect_invalid(chord_nf4_dequantize(&w, dtype, p, nullptr), "this operator needs NF4");
    }
    // The FP16 format has INT4's layout version and group size: anything else is refused.
    chord_w4a16_weight_t bad = w;
    bad.group_size = 64;
    expect_invalid(chord_w4a16_offsets(p, 8, &bad, routing, p, nullptr), "group size 64; supported: 32");
    bad = w;
    bad.layout_version = 2;
    expect_invalid(chord_w4a16_dequantize(&bad, p, nullptr), "layout version");
  }
  CHECK(chord_w4a16_weight_bytes(2, 64, 128) == 2 * 64 * 128 / 2);
  CHECK(chord_w4a16_scale_bytes(2, 64, 128) == 2 * 64 * 4 * 2);  // 16-bit scales either way

  // NF4 and unknown formats are refused by every INT4 operator, naming both INT4 formats.
  chord_w4a16_weight_t nf4{CHORD_W4A16_MAGIC, CHORD_FORMAT_NF4, 2, 64, 2, 64, 128, p, p};
  expect_invalid(chord_w4a16_offsets(p, 8, &nf4, routing, p, nullptr),
                 "format 2 (NF4); this operator needs INT4 group-32 (1: BF16 activations) or INT4 group-32 FP16 "
                 "(3: FP16 activations)");
  expect_invalid(chord_w4a16_masked(p, 2, 4, &nf4, routing, 0, p, nullptr), "format 2 (NF4)");
  chord_w4a16_weight_t unknown{CHORD_W4A16_MAGIC, 10, chord_w4a16_layout_version(), 32, 2, 64, 128, p, p};
  expect_invalid(chord_w4a16_dequantize(&unknown, p, nullptr), "format 10 (unknown)");
  expect_invalid(chord_w4a16_indexed(p, 4, &unknown, routing, 16, routing, routing, 1, 16, p, nullptr),
                 "format 10 (unknown)");
}

TEST_CASE("c api: zero-point formats - packed by chord_w4a16_pack_zp, twice the scale bytes, every INT4 operator",
          "[capi]") {
  void* p = fake();
  const int32_t* routing = static_cast<const int32_t*>(fake());
  chord_w4a16_weight_t tag{};
  CHECK(chord_w4a16_zp_scale_bytes(2, 64, 128) == 2 * chord_w4a16_scale_bytes(2, 64, 128));
  CHECK(chord_w4a16_zp_scale_bytes(2, 60, 128) == -1);
  expect_invalid(chord_w4a16_pack_zp(p, CHORD_W4A16_SRC_CODES | 0x40, p, p, 1, 16, 64, p, p, &tag, nullptr),
                 "src_format");
  expect_invalid(chord_w4a16_pack_zp(p, CHORD_W4A16_SRC_CODES, p, nullptr, 1, 16, 64, p, p, &tag, nullptr),
                 "'zero_points' is a null pointer");
  expect_invalid(chord_w4a16_pack_zp(p, CHORD_W4A16_SRC_CODES, p, p, 1, 16, 48, p, p, &tag, nullptr), "K");
  const chord_status_t packed =
      chord_w4a16_pack_zp(fake_buffer(0), CHORD_W4A16_SRC_COMPRESSED | CHORD_W4A16_SRC_SCALES_FP16, fake_buffer(1),
                          fake_buffer(2), 1, 16, 64, fake_buffer(3), fake_buffer(4), &tag, nullptr);
  CHECK((packed == CHORD_ERROR_NO_DRIVER || packed == CHORD_ERROR_CUDA));
  for (uint32_t format : {uint32_t{CHORD_FORMAT_INT4_G32_ZP}, uint32_t{CHORD_FORMAT_INT4_G32_ZP_FP16}}) {
    chord_w4a16_weight_t w{CHORD_W4A16_MAGIC, format, chord_w4a16_layout_version(), 32, 2, 64, 128, p, p};
    expect_int4_operators_pass_tag(w, p, routing);
    expect_invalid(chord_nf4_offsets(p, CHORD_DTYPE_BF16, 8, &w, routing, p, nullptr), "this operator needs NF4");
  }
}

TEST_CASE("c api: group-128 formats - packed by the CHORD_W4A16_SRC_GROUP_128 flag, a quarter of the scale bytes, "
          "every INT4 operator",
          "[capi]") {
  void* p = fake();
  const int32_t* routing = static_cast<const int32_t*>(fake());
  chord_w4a16_weight_t tag{};
  CHECK(CHORD_FORMAT_INT4_G128 == 6);
  CHECK(CHORD_FORMAT_INT4_G128_FP16 == 7);
  CHECK(CHORD_FORMAT_INT4_G128_ZP == 8);
  CHECK(CHORD_FORMAT_INT4_G128_ZP_FP16 == 9);
  // Scale bytes per format: E * N * K/G entries of 2 (4 with zero points) bytes.
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G32, 2, 64, 256) == chord_w4a16_scale_bytes(2, 64, 256));
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G32_FP16, 2, 64, 256) == 2 * 64 * 8 * 2);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G32_ZP, 2, 64, 256) == chord_w4a16_zp_scale_bytes(2, 64, 256));
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G32_ZP_FP16, 2, 64, 256) == 2 * 64 * 8 * 4);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G128, 2, 64, 256) == 2 * 64 * 2 * 2);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G128_FP16, 2, 64, 256) == 2 * 64 * 2 * 2);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G128_ZP, 2, 64, 256) == 2 * 64 * 2 * 4);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G128_ZP_FP16, 2, 64, 256) == 2 * 64 * 2 * 4);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G128, 2, 64, 192) == -1);  // K % 128 != 0
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G32, 2, 64, 192) == 2 * 64 * 6 * 2);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_INT4_G128, 2, 60, 256) == -1);
  CHECK(chord_w4a16_format_scale_bytes(CHORD_FORMAT_NF4, 2, 64, 256) == -1);  // not an INT4 format
  CHECK(chord_w4a16_format_scale_bytes(10, 2, 64, 256) == -1);

  // The flag needs K % 128 == 0, on both pack entry points, with a message that says so.
  for (int flags : {CHORD_W4A16_SRC_CODES | CHORD_W4A16_SRC_GROUP_128,
                    CHORD_W4A16_SRC_COMPRESSED | CHORD_W4A16_SRC_GROUP_128 | CHORD_W4A16_SRC_SCALES_FP16}) {
    expect_invalid(chord_w4a16_pack(p, flags, p, 1, 16, 192, p, p, &tag, nullptr), "K % 128 == 0");
    expect_invalid(chord_w4a16_pack_zp(p, flags, p, p, 1, 16, 192, p, p, &tag, nullptr), "K % 128 == 0");
    expect_invalid(chord_w4a16_pack(p, flags, p, 1, 16, 100, p, p, &tag, nullptr), "K");
    expect_invalid(chord_w4a16_pack_zp(p, flags, nullptr, p, 1, 16, 128, p, p, &tag, nullptr), "'scales'");
    expect_invalid(chord_w4a16_pack_zp(p, flags, p, nullptr, 1, 16, 128, p, p, &tag, nullptr),
                   "'zero_points' is a null pointer");
    // A valid group-128 pack gets as far as the driver (none here).
    const chord_status_t packed = chord_w4a16_pack(fake_buffer(0), flags, fake_buffer(1), 1, 16, 128, fake_buffer(2),
                                                   fake_buffer(3), &tag, nullptr);
    CHECK((packed == CHORD_ERROR_NO_DRIVER || packed == CHORD_ERROR_CUDA));
    const chord_status_t packed_zp = chord_w4a16_pack_zp(fake_buffer(0), flags, fake_buffer(1), fake_buffer(2), 1, 16,
                                                         128, fake_buffer(3), fake_buffer(4), &tag, nullptr);
    CHECK((packed_zp == CHORD_ERROR_NO_DRIVER || packed_zp == CHORD_ERROR_CUDA));
  }
  expect_invalid(chord_w4a16_pack(p, CHORD_W4A16_SRC_GROUP_128 | 2, p, 1, 16, 128, p, p, &tag, nullptr), "src_format");

  for (uint32_t format : {uint32_t{CHORD_FORMAT_INT4_G128}, uint32_t{CHORD_FORMAT_INT4_G128_FP16},
                          uint32_t{CHORD_FORMAT_INT4_G128_ZP}, uint32_t{CHORD_FORMAT_INT4_G128_ZP_FP16}}) {
    INFO(format);
    chord_w4a16_weight_t w{CHORD_W4A16_MAGIC, format, chord_w4a16_layout_version(), 128, 2, 64, 256, p, p};
    expect_int4_operators_pass_tag(w, p, routing);
    expect_invalid(chord_nf4_offsets(p, CHORD_DTYPE_BF16, 8, &w, routing, p, nullptr), "this operator needs NF4");
    // The tag's group size must be 128, and K a multiple of 128.
    chord_w4a16_weight_t bad = w;
    bad.group_size = 32;
    expect_invalid(chord_w4a16_offsets(p, 8, &bad, routing, p, nullptr), "group size 32; supported: 128");
    bad = w;
    bad.k = 192;
    expect_invalid(chord_w4a16_dequantize(&bad, p, nullptr), "K % 128 == 0");
  }
  // A group-32 format with group size 128 is refused too.
  chord_w4a16_weight_t g32{CHORD_W4A16_MAGIC, CHORD_FORMAT_INT4_G32_ZP, chord_w4a16_layout_version(), 128, 2, 64, 256,
                           p, p};
  expect_invalid(chord_w4a16_masked(p, 2, 4, &g32, routing, 0, p, nullptr), "group size 128; supported: 32");
}

TEST_CASE("c api: an output that overlaps another buffer of the call is refused, naming both", "[capi]") {
  void* a = fake_buffer(0);
  void* b = fake_buffer(1);
  void* c = fake_buffer(2);
  void* d = fake_buffer(3);
  char* w = static_cast<char*>(fake_buffer(4));
  chord_w4a16_weight_t tag{};
  // Packing: the two outputs, and each output against the sources (E 1, N 16, K 64: 512 weight bytes).
  expect_invalid(chord_w4a16_pack(a, CHORD_W4A16_SRC_CODES, b, 1, 16, 64, w, w, &tag, nullptr),
                 "'weight_out' and 'scales_out' overlap");
  expect_invalid(chord_w4a16_pack(a, CHORD_W4A16_SRC_CODES, b, 1, 16, 64, w, w + 256, &tag, nullptr),
                 "'weight_out' and 'scales_out' overlap");
  expect_invalid(chord_w4a16_pack(w, CHORD_W4A16_SRC_CODES, b, 1, 16, 64, w, c, &tag, nullptr),
                 "'weight_out' and 'src' overlap");
  expect_invalid(chord_w4a16_pack(a, CHORD_W4A16_SRC_CODES, b, 1, 16, 64, c, b, &tag, nullptr),
                 "'scales_out' and 'scales' overlap");
  expect_invalid(chord_w4a16_pack_zp(a, CHORD_W4A16_SRC_CODES, b, w + 64, 1, 16, 64, c, w, &tag, nullptr),
                 "'scales_out' and 'zero_points' overlap");
  // Buffers that only touch are fine: the call gets as far as the driver (none here).
  const chord_status_t touching = chord_w4a16_pack(a, CHORD_W4A16_SRC_CODES, b, 1, 16, 64, w, w + 512, &tag, nullptr);
  CHECK((touching == CHORD_ERROR_NO_DRIVER || touching == CHORD_ERROR_CUDA));
  expect_invalid(chord_nf4_pack(a, b, nullptr, nullptr, 0.f, 1, 16, 64, w, w, &tag, nullptr),
                 "'weight_out' and 'absmax_out' overlap");
  expect_invalid(chord_int4_dequantize_codes(a, b, a, 1, 64, 64, nullptr), "'out' and 'codes' overlap");
  // The GEMMs and the dequantize: the output against the activations, the weight and the routing.
  chord_w4a16_weight_t weight{CHORD_W4A16_MAGIC, CHORD_FORMAT_INT4_G32, chord_w4a16_layout_version(), 32, 2, 64,
                              128, w, d};
  const auto* routing = static_cast<const int32_t*>(c);
  expect_invalid(chord_w4a16_dequantize(&weight, w, nullptr), "'out' and 'weight' overlap");
  expect_invalid(chord_w4a16_dequantize(&weight, d, nullptr), "'out' and 'scales' overlap");
  expect_invalid(chord_w4a16_offsets(a, 8, &weight, routing, a, nullptr), "'out' and 'a' overlap");
  expect_invalid(chord_w4a16_contiguous(a, 8, &weight, routing, c, nullptr), "'out' and 'm_indices' overlap");
  expect_invalid(chord_w4a16_masked(a, 2, 4, &weight, routing, 0, c, nullptr), "'out' and 'masked_m' overlap");
  expect_invalid(chord_w4a16_indexed(a, 4, &weight, routing, 16, static_cast<const int32_t*>(b), routing, 1, 16, b,
                                     nullptr),
                 "'out' and 'expert_ids' overlap");
  expect_invalid(chord_moe_activation(CHORD_ACTIVATION_UNARY, "a", CHORD_DTYPE_BF16, a, 4, 64, b, 4,
                                      static_cast<const int32_t*>(b), 1, nullptr, 0, nullptr, nullptr),
                 "'out' and 'scatter_idx' overlap");
}

TEST_CASE("c api: non-finite NF4 offsets, row counts past int32 and bad tuning-json arguments are named", "[capi]") {
  chord_w4a16_weight_t tag{};
  for (float offset : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    expect_invalid(chord_nf4_pack(fake_buffer(0), fake_buffer(1), fake_buffer(2), fake_buffer(3), offset, 1, 16, 64,
                                  fake_buffer(4), fake_buffer(5), &tag, nullptr),
                   "'offset'");
  }
  // Row indices are int32 on the device: INT_MAX rows at most.
  expect_invalid(chord_moe_activation(CHORD_ACTIVATION_UNARY, "a", CHORD_DTYPE_BF16, fake_buffer(0), int64_t{1} << 31,
                                      64, fake_buffer(1), int64_t{1} << 31, nullptr, 0, nullptr, 0, nullptr, nullptr),
                 "'rows'");
  char text[64];
  CHECK(chord_w4a16_tuning_json(nullptr, 8, int64_t{1} << 25, 7168, 8, text, sizeof text) == -1);
  CHECK(std::string(chord_last_error()).find("argument 'N' = 33554432 is out of range") != std::string::npos);
  CHECK(chord_w4a16_tuning_json(nullptr, 8, 4096, 0, 8, text, sizeof text) == -1);
  CHECK(std::string(chord_last_error()).find("argument 'K' = 0") != std::string::npos);
  CHECK(chord_w4a16_tuning_json(nullptr, 8, 4096, 7168, 8, text, -5) == -1);
  CHECK(std::string(chord_last_error()).find("argument 'capacity' = -5 is negative") != std::string::npos);
  CHECK(chord_w4a16_last_kernel(text, -5) == -1);
  CHECK(std::string(chord_last_error()).find("argument 'capacity' = -5 is negative") != std::string::npos);
}

TEST_CASE("c api: the tuning json's open-ended row ends at INT_MAX tokens whatever E and top_k are", "[capi]") {
  for (int64_t experts : {8, 48, 256, 65536}) {
    for (int64_t top_k : {1, 8}) {
      const int64_t length = chord_w4a16_tuning_json(nullptr, experts, 4096, 7168, top_k, nullptr, 0);
      REQUIRE(length > 0);
      std::string text(static_cast<size_t>(length) + 1, '\0');
      REQUIRE(chord_w4a16_tuning_json(nullptr, experts, 4096, 7168, top_k, text.data(), length + 1) == length);
      // Every number before a row's config is a token bound: none may pass INT_MAX.
      INFO("E " << experts << " top_k " << top_k << ": " << text.substr(0, 200));
      size_t at = 0;
      int64_t largest = 0;
      while ((at = text.find('[', at)) != std::string::npos) {
        ++at;
        if (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
          const size_t comma = text.find(',', at);
          const size_t next = text.find(',', comma + 1);
          largest = std::max<int64_t>(largest, std::stoll(text.substr(comma + 1, next - comma - 1)));
        }
      }
      CHECK(largest > 0);
      CHECK(largest <= INT32_MAX);
      if (experts * 1000000000 / top_k > INT32_MAX) CHECK(largest == INT32_MAX);  // clamped, not wrapped
    }
  }
}

TEST_CASE("c api: a failed driver call carries its CUresult, and only an image error condemns a cached cubin",
          "[capi]") {
  try {
    chord::check_cuda(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData(...)");
    FAIL("check_cuda did not throw");
  } catch (const chord::Error& e) {
    CHECK(e.status() == CHORD_ERROR_CUDA);
    CHECK(e.cuda_result() == static_cast<int>(CUDA_ERROR_INVALID_IMAGE));
    CHECK(std::string(e.what()).find("cuModuleLoadData") != std::string::npos);
  }
  for (CUresult image : {CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NOT_FOUND,
                         CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_UNKNOWN}) {
    CHECK(chord::cuda_error_blames_image(static_cast<int>(image)));
  }
  // The process's state: the entry stays for the other GPUs and processes that share it.
  for (CUresult state : {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                         CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                         CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_ASSERT,
                         CUDA_ERROR_MPS_SERVER_NOT_READY}) {
    CHECK_FALSE(chord::cuda_error_blames_image(static_cast<int>(state)));
  }
  CHECK(chord::Error(CHORD_ERROR_INVALID_ARGUMENT, "x").cuda_result() == 0);
}
